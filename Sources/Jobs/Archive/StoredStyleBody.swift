import Foundation
import Packs
import Plan

/// The body packd stores for a style: the upstream's bytes, except that a style naming PMTiles
/// archives as `pmtiles://…` is stored naming them by key (`PMTilesSourceURL.storedStyle`), so a
/// side-loaded pack finds them offline. Downloads, revalidations and update checks all compare
/// and store this form. On a pool thread (it parses the style).
enum StoredStyleBody {
    static func body(_ body: [UInt8], url: String) -> [UInt8] {
        guard let text = try? ZlibCodec.gunzippedIfGzip(body, limit: PlanLimits().maxDocumentBytes),
              let stored = PMTilesSourceURL.storedStyle(Data(text), url: url) else { return body }
        return Array(stored)
    }
}
