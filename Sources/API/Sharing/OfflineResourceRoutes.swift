import Foundation
import Logging
import Packs
import Plan
import Server
import TimeFormats

/// Serves a pack for offline rendering: `style.json` with every URL rewritten to packd, and the
/// stored TileJSONs, tiles, GeoJSON/image data, sprites and glyphs behind those URLs (openapi.yaml,
/// "Offline resource URLs").
///
/// Every row is read with its link to the pack, so the pack serves exactly what it holds (a tile
/// outside it is 404 even when another pack or the cache has it). Stored zlib bodies go out as
/// gzip to clients that accept it (re-wrapped, not recompressed), decompressed to others. Reads
/// run on the thread pool; the loop only routes and answers.
///
/// Browsers cannot put `Authorization` on the requests MapLibre GL JS makes for tiles, sprites
/// and glyphs unless the page sets `transformRequest`, so these routes also take
/// `?access_token=`; a style or TileJSON fetched with one carries the same token in every URL it
/// returns (the caller's own key, to the caller, marked `Cache-Control: private, no-store`).
public final class OfflineResourceRoutes {
    let store: any PackStore
    let authenticator: APIKeyAuthenticator
    /// `scheme://host[:port]` for the rewritten URLs; nil: from the request's `Host`.
    let publicURL: String?
    let logger: Logger
    private let indexes = OfflinePackIndexCache()
    private let responses = OfflineResponseCache()

    /// Forgets what is cached of a removed pack, so nothing of it is served once the removal is
    /// answered (the caches otherwise keep answers for their 5 s lifetime).
    func packRemoved(_ packID: Int64) {
        indexes.remove(packID)
        responses.removeAll(packID: packID)
    }

    public init(store: any PackStore, authenticator: APIKeyAuthenticator, publicURL: String? = nil,
                logger: Logger = Logger(label: "packd.api")) {
        self.store = store
        self.authenticator = authenticator
        self.publicURL = publicURL.flatMap(Self.publicBaseURL)
        self.logger = logger
    }

    public func register(in router: inout Router, using routes: APIRouteBuilder) {
        // The router keeps these handlers, and through them this object, for the server's life.
        let add = { (path: String, router: inout Router, handler: @escaping (Int64, HTTPRequest, APIResponder) -> Void) in
            routes.pack.add(.get, path, role: .read, allowsQueryToken: true, to: &router) { handler($0.rawValue, $1, $2) }
        }
        add("/style.json", &router) { self.style($0, $1, $2) }
        // `{source}.json` and `{range}.pbf` are not whole segments: the suffix is checked here.
        add("/sources/{file}", &router) { self.tileJSON($0, $1, $2) }
        add("/sources/{source}/data", &router) { self.data($0, $1, $2) }
        add("/tiles/{source}/{z}/{x}/{y}", &router) { self.tile($0, $1, $2) }
        add("/sprites/{sprite}/{file}", &router) { self.sprite($0, $1, $2) }
        add("/glyphs/{fontstack}/{file}", &router) { self.glyphs($0, $1, $2) }
    }

    // MARK: Documents

    private func style(_ packID: Int64, _ request: HTTPRequest, _ responder: APIResponder) {
        guard let links = links(request, packID, responder) else { return }
        withIndex(packID, responder) { index in
            guard let style = index.style else {
                return responder.respond(Problem(.notFound, detail: "pack \(packID) is a tiles region and has no style; use sources/tiles.json"))
            }
            self.respondDocument(Array(style.rewritten(links, maxZooms: index.maxZooms)), links: links, request, responder)
        }
    }

    private func tileJSON(_ packID: Int64, _ request: HTTPRequest, _ responder: APIResponder) {
        guard let file = request.parameters["file"], file.hasSuffix(".json"), file.count > 5 else {
            return responder.respond(Problem(.notFound, detail: "source documents are named {source}.json"))
        }
        let sourceID = String(file.dropLast(5))
        guard let links = links(request, packID, responder) else { return }
        withIndex(packID, responder) { index in
            guard let source = index.tileSources[sourceID] else {
                return responder.respond(Problem(.notFound, detail: "pack \(packID) has no tile source '\(sourceID.prefix(256))'"))
            }
            let tilesURL = links.tiles(source: sourceID)
            let maxZoom = source.maxZoom
            guard let url = source.tileJSONURL else {
                return self.respondDocument(Array(OfflineTileJSON.rewritten(nil, tileset: source.tileset, tilesURL: tilesURL,
                                                                            maxZoom: maxZoom)),
                                            links: links, request, responder)
            }
            self.store.read({ reader -> [UInt8]? in
                guard let body = try reader.resource(.resource(url: url, kind: .source), linkedTo: packID)?.body else { return nil }
                return Array(OfflineTileJSON.rewritten(Data(try body.decoded()), tileset: source.tileset, tilesURL: tilesURL,
                                                       maxZoom: maxZoom))
            }) { result in
                switch result {
                case .failure(let error): responder.respondInternalError(error, logger: self.logger, "reading a TileJSON")
                case .success(nil): responder.respond(Problem(.notFound, detail: "pack \(packID) no longer holds this TileJSON"))
                case .success(let body?): self.respondDocument(body, links: links, request, responder)
                }
            }
        }
    }

    /// A rewritten document: its ETag is its hash (it depends on the base URL and token too).
    private func respondDocument(_ body: [UInt8], links: OfflineLinks, _ request: HTTPRequest, _ responder: APIResponder) {
        let etag = PackDocument.etag(of: body)
        var headers: HTTPHeaders = ["ETag": etag]
        if !links.query.isEmpty { headers.set("Cache-Control", "private, no-store") }
        if let tags = request.headers["If-None-Match"], ImmutableFileAnswer.matchesAny(tags, etag: etag, weak: true) {
            return responder.respond(HTTPResponse(status: .notModified, headers: headers))
        }
        headers.set("Content-Type", "application/json")
        responder.respond(HTTPResponse(status: .ok, headers: headers, body: body))
    }

    // MARK: Stored resources

    private func tile(_ packID: Int64, _ request: HTTPRequest, _ responder: APIResponder) {
        let parameters = request.parameters
        guard let sourceID = parameters["source"], let z = Self.coordinate(parameters["z"]), z <= 30,
              let x = Self.coordinate(parameters["x"]), let y = Self.coordinate(parameters["y"]),
              x < 1 << z, y < 1 << z else {
            return responder.respond(Problem(.notFound, detail: "no such tile: z is 0 to 30, x and y 0 to 2^z - 1"))
        }
        withIndex(packID, responder) { index in
            guard let source = index.tileSources[sourceID] else {
                return responder.respond(Problem(.notFound, detail: "pack \(packID) has no tile source '\(sourceID.prefix(256))'"))
            }
            let key = TileKey(urlTemplate: source.tileset.template.template, pixelRatio: source.pixelRatio, z: z, x: x, y: y)
            self.serveStored(.tile(key), packID: packID, request, responder)
        }
    }

    private func data(_ packID: Int64, _ request: HTTPRequest, _ responder: APIResponder) {
        guard let sourceID = request.parameters["source"] else { return }
        withIndex(packID, responder) { index in
            guard case .data(let url)? = index.style?.sources[sourceID] else {
                return responder.respond(Problem(.notFound, detail: "pack \(packID) has no GeoJSON or image source '\(sourceID.prefix(256))' with a URL"))
            }
            self.serveStored(.resource(url: url, kind: .source), packID: packID, request, responder)
        }
    }

    private func sprite(_ packID: Int64, _ request: HTTPRequest, _ responder: APIResponder) {
        guard let id = request.parameters["sprite"], let file = request.parameters["file"] else { return }
        withIndex(packID, responder) { index in
            guard let url = index.style?.spriteURL(id: id, file: file) else {
                return responder.respond(Problem(.notFound, detail: "pack \(packID) has no sprite file '\(id.prefix(256))/\(file.prefix(32))'"))
            }
            self.serveStored(.resource(url: url, kind: file.hasSuffix(".json") ? .spriteJSON : .spriteImage), packID: packID, request, responder)
        }
    }

    private func glyphs(_ packID: Int64, _ request: HTTPRequest, _ responder: APIResponder) {
        guard let fontStack = request.parameters["fontstack"], fontStack.utf8.count <= 1024,
              let start = Self.glyphRangeStart(request.parameters["file"]) else {
            return responder.respond(Problem(.notFound, detail: "glyph ranges are named {start}-{start+255}.pbf, start a multiple of 256 up to 65280"))
        }
        withIndex(packID, responder) { index in
            guard let url = index.style?.glyphsURL(fontStack: fontStack, rangeStart: start) else {
                return responder.respond(Problem(.notFound, detail: "pack \(packID) has no glyphs"))
            }
            self.serveStored(.resource(url: url, kind: .glyphs), packID: packID, request, responder)
        }
    }

    /// What the pool hands back for one stored row.
    private struct Prepared: Sendable {
        var headers: [(String, String)]
        var etag: String
        var modified: Int64?
        var notModified: Bool
        /// nil: stored as "no content" (or not read, for a 304).
        var body: [UInt8]?
    }

    /// Reads `key` as linked to the pack and answers it: 304 on a matching `If-None-Match` (or,
    /// without one, `If-Modified-Since`), 204 for "no content", else the bytes (gzip when stored
    /// compressed and accepted). Recently served answers come from `responses`, on the loop.
    private func serveStored(_ key: ResourceKey, packID: Int64, _ request: HTTPRequest, _ responder: APIResponder) {
        let tags = request.headers["If-None-Match"]
        let since = tags == nil ? request.headers["If-Modified-Since"].flatMap { HTTPDate.parse($0) } : nil
        let acceptsGzip = Self.acceptsGzip(request.headers["Accept-Encoding"])
        let cacheKey = OfflineResponseCache.Key(packID: packID, row: key, gzip: acceptsGzip)
        @Sendable func isNotModified(etag: String, modified: Int64?) -> Bool {
            if let tags { return ImmutableFileAnswer.matchesAny(tags, etag: etag, weak: true) }
            guard let since, let modified else { return false }
            return modified <= since
        }
        func answer(headers: HTTPHeaders, notModified: Bool, body: [UInt8]?) {
            if notModified {
                var headers = headers
                headers.remove("Content-Type")
                headers.remove("Content-Encoding")
                return responder.respond(HTTPResponse(status: .notModified, headers: headers))
            }
            guard let body else { return responder.respond(HTTPResponse(status: .noContent, headers: headers)) }
            responder.respond(HTTPResponse(status: .ok, headers: headers, body: body))
        }
        if let cached = responses.entry(cacheKey) {
            return answer(headers: cached.headers, notModified: isNotModified(etag: cached.etag, modified: cached.modified), body: cached.body)
        }
        store.read({ reader -> Prepared? in
            guard let resource = try reader.resource(key, linkedTo: packID) else { return nil }
            var headers: [(String, String)] = []
            let etag = resource.cache.etag ?? Self.syntheticETag(resource, isTile: key.isTile)
            headers.append(("ETag", etag))
            if let modified = resource.cache.modified { headers.append(("Last-Modified", HTTPDate.format(modified))) }
            if let expires = resource.cache.expires { headers.append(("Expires", HTTPDate.format(expires))) }
            var prepared = Prepared(headers: headers, etag: etag, modified: resource.cache.modified,
                                    notModified: isNotModified(etag: etag, modified: resource.cache.modified), body: nil)
            guard let stored = resource.body, !prepared.notModified else { return prepared }
            if stored.compressed { prepared.headers.append(("Vary", "Accept-Encoding")) }
            if acceptsGzip, let gzip = try stored.gzipped() {
                prepared.headers.append(("Content-Encoding", "gzip"))
                prepared.headers.append(("Content-Type", OfflineMediaType.contentType(of: key, decodedPrefix: nil)))
                prepared.body = gzip
            } else {
                let body = try stored.decoded()
                prepared.headers.append(("Content-Type", OfflineMediaType.contentType(of: key, decodedPrefix: body.prefix(16))))
                prepared.body = body
            }
            return prepared
        }) { [responses, logger] result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "reading a stored resource")
            case .success(nil): responder.respond(Problem(.notFound, detail: "pack \(packID) does not hold this resource"))
            case .success(let prepared?):
                var headers = HTTPHeaders()
                for (name, value) in prepared.headers { headers.set(name, value) }
                if !prepared.notModified {
                    responses.insert(cacheKey, headers: headers, etag: prepared.etag, modified: prepared.modified, body: prepared.body)
                }
                answer(headers: headers, notModified: prepared.notModified, body: prepared.body)
            }
        }
    }

    /// A strong tag for a row stored without one: its id and a checksum of its stored bytes.
    static func syntheticETag(_ resource: StoredResource, isTile: Bool) -> String {
        let checksum = resource.body.map { body in body.data.withUnsafeBytes { ZlibCodec.adler32Of($0) } } ?? 0
        return "\"packd-\(isTile ? "t" : "r")\(resource.id)-\(String(checksum, radix: 16))\""
    }

    // MARK: Request pieces

    /// The pack's index, cached or read on the pool; an unavailable pack is answered 404 here.
    private func withIndex(_ packID: Int64, _ responder: APIResponder, _ then: @escaping (OfflinePackIndex) -> Void) {
        if let index = indexes.index(of: packID) { return then(index) }
        store.read({ reader in try OfflinePackIndex.load(packID: packID, from: reader) }) { [indexes, logger] result in
            switch result {
            case .success(let index):
                indexes.insert(index)
                then(index)
            case .failure(let unavailable as OfflinePackIndex.Unavailable):
                responder.respond(Problem(.notFound, detail: unavailable.detail))
            case .failure(let error as PlanError):
                responder.respond(Problem(.notFound, detail: "the stored style cannot be served: \(error.description)"))
            case .failure(let error):
                responder.respondInternalError(error, logger: logger, "reading pack \(packID) for offline serving")
            }
        }
    }

    /// The links of this pack as the client should see them; nil after answering 400 for a
    /// request whose `Host` cannot be put in a URL.
    private func links(_ request: HTTPRequest, _ packID: Int64, _ responder: APIResponder) -> OfflineLinks? {
        let origin: String
        if let publicURL {
            origin = publicURL
        } else {
            guard let host = request.headers["Host"], Self.isHost(host) else {
                responder.respond(Problem(.malformedRequest, detail: "a Host header (host[:port]) is needed to build the offline URLs"))
                return nil
            }
            origin = "http://" + host
        }
        var query = ""
        if authenticator.isEnabled, request.headers["Authorization"] == nil,
           let token = request.queryValue("access_token"), !token.isEmpty {
            query = "?access_token=" + OfflineLinks.segment(token)
        }
        return OfflineLinks(packBase: origin + "/v1/packs/\(packID)", query: query)
    }

    /// A configured public base URL, checked (`http(s)://host[:port][/path]`, no user info, query
    /// or fragment) and without a trailing slash; nil when it is not one.
    public static func publicBaseURL(_ text: String) -> String? {
        let lower = text.lowercased()
        guard text.utf8.count <= 512, lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return nil }
        let rest = text.drop { $0 != ":" }.dropFirst(3)
        let host = rest.prefix { $0 != "/" }
        guard isHost(String(host)), !text.contains(where: { "?#@ ".contains($0) || $0.asciiValue.map { $0 < 0x21 || $0 > 0x7E } ?? true }) else {
            return nil
        }
        var url = text
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }

    static func isHost(_ text: String) -> Bool {
        (1...262).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"): true
            default: false
            }
        }
    }

    /// A decimal path segment of at most 10 digits.
    static func coordinate(_ text: String?) -> Int64? {
        guard let text, (1...10).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }

    /// `start-end.pbf` with `start` a multiple of 256 up to 65280 and `end = start + 255`.
    static func glyphRangeStart(_ file: String?) -> Int? {
        guard let file, file.hasSuffix(".pbf") else { return nil }
        let parts = file.dropLast(4).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = coordinate(String(parts[0])), let end = coordinate(String(parts[1])),
              start % 256 == 0, start <= 65280, end == start + 255 else { return nil }
        return Int(start)
    }

    /// Whether `Accept-Encoding` allows gzip (RFC 9110 §12.5.3: listed, or `*`, without `q=0`).
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header, header.utf8.count <= 1024 else { return false }
        var gzip: Bool?
        var any: Bool?
        for item in header.lowercased().split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let coding = parts.first else { continue }
            let refused = parts.dropFirst().contains { $0.replacingOccurrences(of: " ", with: "").range(of: #"^q=0(\.0{0,3})?$"#, options: .regularExpression) != nil }
            if coding == "gzip" || coding == "x-gzip" { gzip = !refused } else if coding == "*" { any = !refused }
        }
        return gzip ?? any ?? false
    }
}

/// The `Content-Type` of a served row. The offline schema stores none, so it comes from the bytes
/// (image signatures) and otherwise from what the row is: a vector tile or glyph range is
/// protobuf, sprite indexes and GeoJSON are JSON.
enum OfflineMediaType {
    static func contentType(of key: ResourceKey, decodedPrefix: ArraySlice<UInt8>?) -> String {
        if let prefix = decodedPrefix, let image = imageType(Array(prefix)) { return image }
        switch key {
        case .tile: return "application/x-protobuf"
        case .resource(_, let kind):
            switch kind {
            case .glyphs: return "application/x-protobuf"
            case .style, .source, .spriteJSON: return "application/json"
            case .spriteImage: return "image/png"
            case .tile, .image: return "application/octet-stream"
            }
        }
    }

    static func imageType(_ bytes: [UInt8]) -> String? {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if bytes.starts(with: Array("GIF8".utf8)) { return "image/gif" }
        if bytes.count >= 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) { return "image/webp" }
        return nil
    }
}
