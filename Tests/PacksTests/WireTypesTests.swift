import Foundation
import Packs
import Testing
@testable import Packs
import TimeFormats

/// The wire types encode exactly the JSON openapi.yaml describes (sorted keys, `null` where the
/// schema requires a field) and decode back to the same value, so a client built on them reads
/// what the server writes.
@Suite struct WireTypesTests {
    static let pack = Pack(
        id: 42, name: nil,
        region: Region(styleURL: "https://example.org/style.json", bounds: [-11, 35.5, 20, 60], minZoom: 0, maxZoom: 5,
                       pixelRatio: 1, includeIdeographs: false),
        context: Base64Bytes([0, 1, 254, 255]), state: .active, createdAt: Timestamp(1_795_464_000),
        updatedAt: Timestamp(1_795_464_061), completedAt: nil,
        progress: PackProgress(completedResources: 1200, completedBytes: 18_500_000, completedTiles: 1150,
                               completedTileBytes: 18_000_000, expectedResources: 5290, expectedIsPrecise: true,
                               failedResources: 0, bytesPerSecond: 950_000, etaSeconds: 17),
        limits: PackLimits(maxTiles: 10_000), error: nil, updateAvailable: nil, invalidation: nil)

    @Test func packEncodesSortedWithEveryRequiredFieldAndDecodesBack() throws {
        let bytes = try SortedJSONEncoder.encode(Self.pack)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text == """
            {"completed_at":null,"context":"AAH+/w==","created_at":"2026-11-23T20:00:00Z","error":null,"id":42,\
            "invalidation":null,"limits":{"max_bytes_per_second":null,"max_tiles":10000},"name":null,"next_refresh_at":null,\
            "progress":{"archive_bytes":0,"archive_requests":0,"bytes_per_second":950000,"completed_bytes":18500000,"completed_resources":1200,\
            "completed_tile_bytes":18000000,"completed_tiles":1150,"eta_seconds":17,"expected_is_precise":true,\
            "expected_resources":5290,"failed_resources":0,"throttled":null,"transfers_in_flight":0},"refresh":null,"region":{"bounds":[-11.0,35.5,20.0,60.0],\
            "include_ideographs":false,"max_zoom":5.0,"min_zoom":0.0,"pixel_ratio":1.0,\
            "style_url":"https://example.org/style.json"},"skipped_glyph_ranges":null,"start_area":null,\
            "start_area_ready_at":null,"state":"active","update_available":null,\
            "updated_at":"2026-11-23T20:01:01Z","version":0}
            """)
        #expect(try JSONDecoder().decode(Pack.self, from: Data(bytes)) == Self.pack)
    }

    /// A throttle names the host and why; `until` only for a `Retry-After` pause (api.md's
    /// `{host, reason, until?}`).
    @Test func throttledProgressEncodesItsHostReasonAndPauseEnd() throws {
        var progress = Self.pack.progress
        progress.transfersInFlight = 3
        progress.throttled = PackThrottle(host: "tiles.example.org", reason: .retryAfter, until: Timestamp(1_795_464_030))
        let paused = String(decoding: try SortedJSONEncoder.encode(progress), as: UTF8.self)
        #expect(paused.hasSuffix(#""throttled":{"host":"tiles.example.org","reason":"retry_after","until":"2026-11-23T20:00:30Z"},"transfers_in_flight":3}"#),
                "\(paused)")
        #expect(try JSONDecoder().decode(PackProgress.self, from: Data(paused.utf8)) == progress)
        progress.throttled = PackThrottle(host: "127.0.0.1:8080", reason: .rateLimited)
        let backingOff = String(decoding: try SortedJSONEncoder.encode(progress), as: UTF8.self)
        #expect(backingOff.hasSuffix(#""throttled":{"host":"127.0.0.1:8080","reason":"rate_limited"},"transfers_in_flight":3}"#),
                "\(backingOff)")
        #expect(try JSONDecoder().decode(PackProgress.self, from: Data(backingOff.utf8)) == progress)
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(PackThrottle.self, from: Data(#"{"host":"h","reason":"tired"}"#.utf8))
        }
    }

    @Test func eventsRoundTripByTheirType() throws {
        let events: [PackEvent] = [
            .state(StateEvent(packID: 1, state: .failed, previousState: .active,
                              error: PackError(.upstreamUnauthorized, "refused", url: "https://e/1", status: 403))),
            .state(StateEvent(packID: 2, state: .queued, previousState: nil, error: nil)),
            .progress(ProgressEvent(packID: 1, state: .active, progress: Self.pack.progress)),
            .resourceError(ResourceErrorEvent(packID: 1, url: "https://e/t/1/0/0.pbf", status: nil, error: "timeout",
                                              attempt: 2, willRetry: true)),
            .tileLimitExceeded(TileLimitExceededEvent(packID: 3, count: 120, maximum: 100)),
            .packRemoved(PackRemovedEvent(packID: 4)),
        ]
        for event in events {
            let data = try SortedJSONEncoder.encode(event.payload)
            #expect(try PackEvent(kind: event.kind.rawValue, data: Data(data)) == event)
        }
        let state = try SortedJSONEncoder.encode(events[1].payload)
        #expect(String(decoding: state, as: UTF8.self) == #"{"error":null,"pack_id":2,"previous_state":null,"state":"queued"}"#)
        #expect(throws: (any Error).self) { try PackEvent(kind: "gossip", data: Data("{}".utf8)) }
    }

    @Test func unknownStatesAndErrorCodesAreRefusedNotGuessed() {
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(StateEvent.self, from: Data(#"{"pack_id":1,"state":"paused","previous_state":null,"error":null}"#.utf8))
        }
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(PackError.self, from: Data(#"{"code":"gremlins","detail":"x"}"#.utf8))
        }
    }

    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00Z"), (951_825_600, "2000-02-29T12:00:00Z"), (1_795_464_000, "2026-11-23T20:00:00Z"),
        (253_402_300_799, "9999-12-31T23:59:59Z"), (-1, "1969-12-31T23:59:59Z"),
    ])
    func timestampsAreRFC3339UTC(_ seconds: Int64, _ text: String) {
        #expect(Timestamp(seconds).rfc3339 == text)
        #expect(Timestamp(rfc3339: text) == Timestamp(seconds))
    }

    @Test func timestampParsingAcceptsOffsetsAndFractionsAndRefusesNonsense() {
        #expect(Timestamp(rfc3339: "2026-11-23T21:00:00+01:00") == Timestamp(1_795_464_000))
        #expect(Timestamp(rfc3339: "2026-11-23T20:00:00.999Z") == Timestamp(1_795_464_000))
        for text in ["", "2026-11-23", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-23T20:00:00", "2026-11-23T25:00:00Z",
                     "2026-11-23T20:00:00+1:00", "tomorrow"] {
            #expect(Timestamp(rfc3339: text) == nil, "\(text)")
        }
    }

    @Test func httpDatesAreIMFFixdateAndParseBack() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(-5) == "Thu, 01 Jan 1970 00:00:00 GMT", "clamped")
        #expect(HTTPDate.format(.max) == "Fri, 31 Dec 9999 23:59:59 GMT", "clamped")
        for seconds: Int64 in [0, 951_825_600, 1_795_464_000, HTTPDate.latest] {
            #expect(HTTPDate.parse(HTTPDate.format(seconds)) == seconds)
        }
    }

    @Test func sortedEncoderEscapesControlCharactersAndWritesNonFiniteAsNull() throws {
        struct Sample: Encodable {
            let text = "a\"b\\c\n\r\t\u{01}/é"
            let values = [1.5, .infinity, .nan]
            let zebra = 1
            let apple: Int? = nil
        }
        #expect(String(decoding: try SortedJSONEncoder.encode(Sample()), as: UTF8.self)
            == #"{"text":"a\"b\\c\n\r\t\u0001/é","values":[1.5,null,null],"zebra":1}"#)
    }
}
