import Packs

/// What an API key may do: the domain's `Role` (`read` < `write` < `admin` < `operator`). The keys
/// file takes `read`, `write` and `admin` until tenants arrive (issue 37's operator keys).
public typealias APIRole = Role
