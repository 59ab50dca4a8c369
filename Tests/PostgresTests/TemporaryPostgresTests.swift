import Foundation
import Postgres
import PostgresTestSupport
import Testing

@Suite struct TemporaryPostgresTests {
    /// A server of its own (seconds: initdb), over TCP on an ephemeral loopback port, gone after stop.
    @Test func tcpServerStartsAndStopsWithoutTrace() throws {
        let server = try TemporaryPostgres.start(.init(tcp: true))
        let directory = server.directory
        let url = try #require(server.tcpURL)
        #expect(url.host == "127.0.0.1")
        #expect(url.port == server.port)
        let connection = try PostgresConnection(url: url)
        #expect(try connection.scalarString("SELECT host(inet_server_addr())") == "127.0.0.1")
        #expect(try connection.scalarInt("SELECT inet_server_port()::int8") == Int64(server.port))
        // Never the caller's identity when that is root: PostgreSQL refuses to run as root.
        #expect(try connection.scalarString("SELECT current_setting('data_directory')") == directory + "/data")
        var status = stat()
        #expect(stat(directory + "/data", &status) == 0)
        #expect(status.st_uid != 0 || geteuid() != 0)

        server.stop()
        #expect(!FileManager.default.fileExists(atPath: directory))
        #expect(throws: PostgresError.self) { try connection.query("SELECT 1") }
        #expect(throws: PostgresError.self) { try PostgresConnection(url: url) }
    }

    /// Tests share one server and each gets an empty database of its own.
    @Test func databasesPerTestAreSeparate() throws {
        let server = try TemporaryPostgres.shared()
        let first = try server.makeDatabase(prefix: "separate")
        let second = try server.makeDatabase(prefix: "separate")
        #expect(first.database != second.database)
        try PostgresConnection(url: first).execute("CREATE TABLE only_here (id int8)")
        #expect(try PostgresConnection(url: second).scalarInt(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'only_here'") == 0)
        try server.dropDatabase(first)
        #expect(throws: PostgresError.self) { try PostgresConnection(url: first) }
    }
}
