/// Where a work unit is: waiting for a node, held by one under a lease, or finished. A leased
/// unit whose lease expired is claimable again (its node died or hung).
public enum WorkUnitState: String, Sendable, CaseIterable {
    case pending
    case leased
    case done
}
