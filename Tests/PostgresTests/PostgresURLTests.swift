import Testing
@testable import Postgres

@Suite struct PostgresURLTests {
    @Test func readsEveryPart() throws {
        let url = try PostgresURL("postgresql://alice:s%40cret@db.example.com:6543/packs?sslmode=require&connect_timeout=5")
        #expect(url.user == "alice")
        #expect(url.host == "db.example.com")
        #expect(url.port == 6543)
        #expect(url.database == "packs")
        #expect(url.parameters == [.init(name: "sslmode", value: "require"), .init(name: "connect_timeout", value: "5")])
        #expect(url.hasPassword)
        let keywords = Dictionary(url.connectionKeywords(applicationName: "packd test"), uniquingKeysWith: { a, _ in a })
        #expect(keywords["password"] == "s@cret")
        #expect(keywords["application_name"] == "packd test")
        #expect(keywords["connect_timeout"] == "5")
        #expect(keywords["dbname"] == "packs")
    }

    @Test func neverShowsThePassword() throws {
        let url = try PostgresURL("postgres://bob:hunter2@127.0.0.1/db")
        #expect(url.description == "postgresql://bob@127.0.0.1/db")
        #expect(!"\(url)".contains("hunter2"))
        let query = try PostgresURL("postgresql://bob@localhost/db?password=hunter2&sslmode=disable")
        #expect(!query.description.contains("hunter2"))
        #expect(query.hasPassword)
        #expect(query.parameters.map(\.name) == ["sslmode"])
        // A bad URL's error names the part without echoing the secret.
        let error = #expect(throws: PostgresURL.Invalid.self) { try PostgresURL("postgresql://bob:hunter2@host:99999/db") }
        #expect(error?.part == "port")
        #expect(!"\(error!)".contains("hunter2"))
    }

    @Test func unixSocketDirectoriesAndIPv6() throws {
        let socket = try PostgresURL("postgresql://packd@%2Ftmp%2Fpg-1:5432/db")
        #expect(socket.host == "/tmp/pg-1")
        #expect(socket.description == "postgresql://packd@%2Ftmp%2Fpg-1:5432/db")
        #expect(try PostgresURL(socket.description) == socket)
        let query = try PostgresURL("postgresql:///db?host=/var/run/postgresql&port=5433")
        #expect(query.host == "/var/run/postgresql")
        #expect(query.port == 5433)
        #expect(query.user == nil)
        let v6 = try PostgresURL("postgresql://u@[::1]:5432/db")
        #expect(v6.host == "::1")
        #expect(v6.description == "postgresql://u@[::1]:5432/db")
        let bare = try PostgresURL("postgresql://")
        #expect(bare.host == nil && bare.database == nil && bare.port == nil)
    }

    @Test(arguments: [
        ("mysql://u@h/db", "scheme"),
        ("postgresql://u@h:0/db", "port"),
        ("postgresql://u@h:12ab/db", "port"),
        ("postgresql://u@h1,h2/db", "host"),
        ("postgresql://u@ho$t/db", "host"),
        ("postgresql://u@[zz]/db", "host"),
        ("postgresql://u@h/db?sslmode=sometimes", "query.sslmode"),
        ("postgresql://u@h/db?connect_timeout=0", "query.connect_timeout"),
        ("postgresql://u@h/db?dbname=other", "query.dbname"),
        ("postgresql://u@h/db?service=x", "query.service"),
        ("postgresql://u@h/db?sslmode", "query"),
        ("postgresql://u@h/db?sslmode=require&sslmode=disable", "query.sslmode"),
        ("postgresql://u@h:5432/db?port=5433", "query.port"),
        ("postgresql://u@h/d%ZZ", "database"),
        ("postgresql://u@h/d%00", "database"),
        ("postgresql://u@h/db#frag", "fragment"),
        ("postgresql://u@h/db x", "url"),
        ("postgresql://u@h/" + String(repeating: "d", count: 64), "database"),
        ("postgresql://u@h/db?application_name=" + String(repeating: "a", count: 64), "query.application_name"),
    ])
    func refusesWithThePart(text: String, part: String) {
        let error = #expect(throws: PostgresURL.Invalid.self) { try PostgresURL(text) }
        #expect(error?.part == part)
    }

    @Test func boundsTheLength() {
        let long = "postgresql://u@h/db?options=" + String(repeating: "x", count: PostgresURL.maximumLength)
        #expect(throws: PostgresURL.Invalid(part: "url", reason: "longer than \(PostgresURL.maximumLength) bytes")) {
            try PostgresURL(long)
        }
    }

    @Test func tellsURLsFromPaths() {
        #expect(PostgresURL.looksLikeURL("postgresql://x"))
        #expect(PostgresURL.looksLikeURL("POSTGRES://x"))
        #expect(!PostgresURL.looksLikeURL("./packd.sqlite"))
        #expect(!PostgresURL.looksLikeURL("postgresql.sqlite"))
    }
}
