import CUV

/// libuv's monotonic clock (`uv_hrtime`), for code above the loop that times intervals — event
/// coalescing, rolling rates — without importing libuv itself. Never goes back; unrelated to
/// wall time. Any thread.
public enum MonotonicClock {
    /// Nanoseconds since an arbitrary fixed point.
    public static var nanoseconds: UInt64 { uv_hrtime() }

    /// Milliseconds since that point.
    public static var milliseconds: UInt64 { uv_hrtime() / 1_000_000 }

    /// Seconds since that point, with nanosecond resolution.
    public static var seconds: Double { Double(uv_hrtime()) / 1e9 }
}
