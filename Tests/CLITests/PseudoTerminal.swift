import Glibc

/// A pseudo-terminal pair, so a child process finds a terminal on its standard output or input
/// (`isatty`). posix_openpt and friends need _XOPEN_SOURCE, which Swift's Glibc module does not
/// declare; they are looked up in the C library instead.
struct PseudoTerminal {
    /// The side the test reads (and closes).
    let controller: Int32
    /// The side the child gets (the test closes its copy once the child runs).
    let terminal: Int32

    struct Unavailable: Error {}

    init() throws {
        typealias OpenController = @convention(c) (Int32) -> Int32
        typealias Prepare = @convention(c) (Int32) -> Int32
        typealias Name = @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32
        let library = dlopen(nil, RTLD_NOW)
        guard let open = dlsym(library, "posix_openpt"), let grant = dlsym(library, "grantpt"),
              let unlock = dlsym(library, "unlockpt"), let name = dlsym(library, "ptsname_r") else { throw Unavailable() }
        let controller = unsafeBitCast(open, to: OpenController.self)(O_RDWR | O_NOCTTY)
        guard controller >= 0 else { throw Unavailable() }
        var path = [CChar](repeating: 0, count: 128)
        guard unsafeBitCast(grant, to: Prepare.self)(controller) == 0, unsafeBitCast(unlock, to: Prepare.self)(controller) == 0,
              unsafeBitCast(name, to: Name.self)(controller, &path, path.count) == 0 else {
            close(controller)
            throw Unavailable()
        }
        let terminal = Glibc.open(path, O_RDWR | O_NOCTTY)
        guard terminal >= 0 else {
            close(controller)
            throw Unavailable()
        }
        self.controller = controller
        self.terminal = terminal
    }
}
