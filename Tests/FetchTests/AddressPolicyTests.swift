@testable import Fetch
import Testing

/// Pure classification: no traffic to any of these addresses.
@Suite struct AddressPolicyTests {
    @Test(arguments: [
        ("127.0.0.1", AddressPolicy.Classification.loopback), ("127.255.0.9", .loopback),
        ("10.1.2.3", .privateNetwork), ("172.16.0.1", .privateNetwork), ("172.31.255.255", .privateNetwork),
        ("192.168.1.1", .privateNetwork), ("169.254.169.254", .linkLocal), ("100.64.0.1", .sharedCGNAT),
        ("100.127.255.255", .sharedCGNAT), ("224.0.0.1", .multicast), ("0.0.0.0", .unspecified),
        ("255.255.255.255", .reserved), ("::1", .loopback), ("::", .unspecified), ("fc00::1", .privateNetwork),
        ("fdff:ffff::1", .privateNetwork), ("fe80::1", .linkLocal), ("febf::1", .linkLocal), ("ff02::1", .multicast),
        ("::ffff:127.0.0.1", .loopback), ("::ffff:10.0.0.1", .privateNetwork), ("::ffff:169.254.1.1", .linkLocal),
        ("64:ff9b::a00:1", .privateNetwork),
    ])
    func nonGlobalAddressesAreClassified(_ text: String, _ expected: AddressPolicy.Classification) throws {
        let address = try #require(IPAddress(text))
        #expect(AddressPolicy.classify(address) == expected)
        #expect(!AddressPolicy().permits(address, host: "example.org"))
    }

    @Test(arguments: ["8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.0", "100.63.255.255", "100.128.0.0",
                      "169.253.255.255", "2606:4700::1111", "::ffff:8.8.8.8", "fbff::1", "2a00:1450::1"])
    func globalAddressesArePermitted(_ text: String) throws {
        let address = try #require(IPAddress(text))
        #expect(AddressPolicy.classify(address) == .global)
        #expect(AddressPolicy().permits(address, host: "example.org"))
    }

    @Test func allowRulesOpenExactlyWhatTheyName() throws {
        let policy = AddressPolicy(allowedHosts: ["Tiles.Internal"], allowedRanges: [try #require(AddressRange("10.20.0.0/16"))])
        #expect(policy.permits(try #require(IPAddress("10.20.3.4")), host: "a.example"))
        #expect(policy.permits(try #require(IPAddress("::ffff:10.20.3.4")), host: "a.example"))
        #expect(!policy.permits(try #require(IPAddress("10.21.0.1")), host: "a.example"))
        #expect(policy.permits(try #require(IPAddress("192.168.0.1")), host: "tiles.internal"))
        #expect(!policy.permits(try #require(IPAddress("192.168.0.1")), host: "tiles.internal.evil"))
    }

    @Test(arguments: ["10.0.0.0/33", "::/129", "10.0.0.0/-1", "10.0.0/8", "", "/8", "1.2.3.4/8/9", "fe80::1%eth0/64", "1.2.3.4/0008"])
    func malformedRangesAreRejected(_ text: String) {
        #expect(AddressRange(text) == nil)
    }

    @Test func rangeContainmentHonoursPrefixBits() throws {
        let range = try #require(AddressRange("2001:db8:8000::/33"))
        #expect(range.contains(try #require(IPAddress("2001:db8:8000::1"))))
        #expect(range.contains(try #require(IPAddress("2001:db8:ffff::1"))))
        #expect(!range.contains(try #require(IPAddress("2001:db8:7fff::1"))))
        #expect(!range.contains(try #require(IPAddress("10.0.0.1"))))
        #expect(try #require(AddressRange("0.0.0.0/0")).contains(try #require(IPAddress("8.8.8.8"))))
    }
}
