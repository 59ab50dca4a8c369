import Postgres
import WorkSharing

/// Cluster mode's settings of `packd serve`: the PostgreSQL every node shares, how long a claim
/// of a work unit lasts without a heartbeat, and how many tiles a unit holds at most.
struct ClusterConfiguration {
    var url: PostgresURL
    var timing = LeaseTiming.standard
    var unitTiles = WorkUnitCut.defaultUnitTiles

    init(url setting: (text: String, setting: String), options: ServeCommand.Options,
         source: ServerConfiguration.Source) throws(ServerConfiguration.Invalid) {
        do {
            url = try PostgresURL(setting.text)
        } catch {
            // The error names the part of the URL, never its value (a password may be in it).
            throw ServerConfiguration.Invalid(setting: setting.setting, problem: error.description)
        }
        if let lease = try source.duration(options.clusterLease, "CLUSTER_LEASE") {
            let seconds = Double(lease.components.seconds) + Double(lease.components.attoseconds) / 1e18
            guard seconds >= 1 else {
                throw ServerConfiguration.Invalid(setting: source.value(options.clusterLease, "CLUSTER_LEASE")?.setting
                                                  ?? "--cluster-lease", problem: "a lease lasts at least 1s")
            }
            timing = LeaseTiming(lease: seconds)
        }
        unitTiles = try source.count(options.clusterUnitTiles, "CLUSTER_UNIT_TILES", 16...1_000_000) ?? unitTiles
    }
}
