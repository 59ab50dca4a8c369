import ArgumentParser

/// Who reads the output: a person at a terminal gets text (and `wait` a progress bar), anything
/// else — a pipe, a file, CI — JSON, one document per line. `--json` asks for JSON on a terminal.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON (one document per line) even on a terminal.")
    var json = false

    /// Whether to print for a person.
    var forPerson: Bool { !json && Terminal.outputIsTerminal }
}
