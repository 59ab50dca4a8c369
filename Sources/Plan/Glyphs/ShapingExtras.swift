import Foundation

/// The characters MapLibre requests glyphs for beyond a label's own text:
///
/// - Arabic shaping. MapLibre Native shapes Arabic with ICU (`u_shapeArabic`, letters shaped)
///   before it requests glyphs, so `ب` is drawn as one of `ﺏ ﺐ ﺑ ﺒ` and lam + alef as one of
///   the ligatures `ﻵ … ﻼ`; MapLibre GL JS without its RTL plugin draws the letters unshaped.
///   Both are kept: every presentation form of each Arabic letter present (Forms-A and -B, from
///   Unicode's compatibility decompositions), and the lam-alef ligatures when both are present.
/// - Vertical punctuation. A label laid out along a line, or in vertical writing mode, whose
///   text has characters drawn upright in vertical text (CJK, kana, Hangul…) also requests the
///   vertical form of its punctuation (`（` → `︵`), as `util::i18n::verticalizePunctuation`.
enum ShapingExtras {
    /// Arabic letter → its presentation forms (single letters: isolated, final, initial, medial).
    static let arabicForms: [UInt32: [UInt32]] = {
        var forms: [UInt32: [UInt32]] = [:]
        for form in presentationForms {
            guard let scalar = Unicode.Scalar(form) else { continue }
            let base = String(Character(scalar)).precomposedStringWithCompatibilityMapping.unicodeScalars
                .map(\.value).filter { $0 != 0x20 }
            if base.count == 1, base[0] != form { forms[base[0], default: []].append(form) }
        }
        return forms
    }()

    /// Lam-alef ligatures (U+FEF5…U+FEFC): the alef each one joins with lam.
    static let lamAlef: [(alef: UInt32, ligature: UInt32)] = {
        (0xFEF5...0xFEFC).compactMap { ligature -> (UInt32, UInt32)? in
            guard let scalar = Unicode.Scalar(UInt32(ligature)) else { return nil }
            let base = String(Character(scalar)).precomposedStringWithCompatibilityMapping.unicodeScalars.map(\.value)
            guard base.count == 2, base[0] == 0x0644 else { return nil }
            return (base[1], UInt32(ligature))
        }
    }()

    /// Arabic Presentation Forms-A (U+FB50…U+FDFF) and -B (U+FE70…U+FEFF).
    private static var presentationForms: [UInt32] { Array(0xFB50...0xFDFF) + Array(0xFE70...0xFEFF) }

    /// Whether `value` is in a block MapLibre shapes as Arabic.
    static func isArabic(_ value: UInt32) -> Bool {
        (0x0600...0x06FF).contains(value) || (0x0750...0x077F).contains(value) || (0x08A0...0x08FF).contains(value)
    }

    /// The presentation forms shaping can draw for the Arabic letters among `scalars`.
    static func shapedForms(of scalars: Set<UInt32>) -> [UInt32] {
        var forms: [UInt32] = []
        for value in scalars where isArabic(value) { forms += arabicForms[value] ?? [] }
        if scalars.contains(0x0644) {
            for (alef, ligature) in lamAlef where scalars.contains(alef) { forms.append(ligature) }
        }
        return forms
    }

    /// `util::i18n::verticalPunctuation`: horizontal punctuation → the vertical form MapLibre
    /// also requests for a label that may be drawn vertically.
    static let verticalPunctuation: [UInt32: UInt32] = [
        0x21: 0xFE15, 0x23: 0xFF03, 0x24: 0xFF04, 0x25: 0xFF05, 0x26: 0xFF06, 0x28: 0xFE35, 0x29: 0xFE36,
        0x2A: 0xFF0A, 0x2B: 0xFF0B, 0x2C: 0xFE10, 0x2D: 0xFE32, 0x2E: 0x30FB, 0x2F: 0xFF0F, 0x3A: 0xFE13,
        0x3B: 0xFE14, 0x3C: 0xFE3F, 0x3D: 0xFF1D, 0x3E: 0xFE40, 0x3F: 0xFE16, 0x40: 0xFF20, 0x5B: 0xFE47,
        0x5C: 0xFF3C, 0x5D: 0xFE48, 0x5E: 0xFF3E, 0x5F: 0xFE33, 0x60: 0xFF40, 0x7B: 0xFE37, 0x7C: 0x2015,
        0x7D: 0xFE38, 0x7E: 0xFF5E, 0xA2: 0xFFE0, 0xA3: 0xFFE1, 0xA5: 0xFFE5, 0xA6: 0xFFE4, 0xAC: 0xFFE2,
        0xAF: 0xFFE3, 0x2013: 0xFE32, 0x2014: 0xFE31, 0x2018: 0xFE43, 0x2019: 0xFE44, 0x201C: 0xFE41,
        0x201D: 0xFE42, 0x2026: 0xFE19, 0x2027: 0x30FB, 0x20A9: 0xFFE6, 0x3001: 0xFE11, 0x3002: 0xFE12,
        0x3008: 0xFE3F, 0x3009: 0xFE40, 0x300A: 0xFE3D, 0x300B: 0xFE3E, 0x300C: 0xFE41, 0x300D: 0xFE42,
        0x300E: 0xFE43, 0x300F: 0xFE44, 0x3010: 0xFE3B, 0x3011: 0xFE3C, 0x3014: 0xFE39, 0x3015: 0xFE3A,
        0x3016: 0xFE17, 0x3017: 0xFE18, 0xFF01: 0xFE15, 0xFF08: 0xFE35, 0xFF09: 0xFE36, 0xFF0C: 0xFE10,
        0xFF0D: 0xFE32, 0xFF0E: 0x30FB, 0xFF1A: 0xFE13, 0xFF1B: 0xFE14, 0xFF1C: 0xFE3F, 0xFF1E: 0xFE40,
        0xFF1F: 0xFE16, 0xFF3B: 0xFE47, 0xFF3D: 0xFE48, 0xFF3F: 0xFE33, 0xFF5B: 0xFE37, 0xFF5C: 0x2015,
        0xFF5D: 0xFE38, 0xFF5F: 0xFE35, 0xFF60: 0xFE36, 0xFF61: 0xFE12, 0xFF62: 0xFE41, 0xFF63: 0xFE42,
    ]

    /// Whether MapLibre draws `value` upright in vertical text (`hasUprightVerticalOrientation`),
    /// widened to whole blocks where MapLibre excepts a few characters: a text with any of these
    /// may be laid out vertically.
    static func isUprightInVerticalText(_ value: UInt32) -> Bool {
        if value == 0x02EA || value == 0x02EB { return true }
        guard value >= 0x1100 else { return false }
        let blocks: [ClosedRange<UInt32>] = [
            0x1100...0x11FF, 0x1400...0x167F, 0x18B0...0x18FF, 0x2E80...0x2FDF, 0x2FF0...0x303F, 0x3040...0x31FF,
            0x3200...0x4DBF, 0x4DC0...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7FF, 0xF900...0xFAFF,
            0xFE10...0xFE1F, 0xFE30...0xFE6F, 0xFF00...0xFFEF,
        ]
        return blocks.contains { $0.contains(value) }
    }
}
