import Foundation
import Packs

/// The end of `packd wait` and `packd create --wait`: follows the pack with a progress bar or
/// JSON lines, then says how it ended — exit 0 complete, 1 failed or deleted, with the pack's
/// error and its first failed resources on standard error.
struct PackWait {
    /// Failed resources listed on standard error when a pack fails.
    static let listedFailures = 5

    let client: ServerClient
    let packID: Int64
    let forPerson: Bool
    let command: String

    func run() throws(ClientFailure) -> Int32 {
        let view: any PackEventView = forPerson ? ProgressBar(packID: packID) : EventLines()
        let outcome: PackFollower.Outcome
        do {
            outcome = try PackFollower(client: client, packID: packID, view: view).follow()
            view.finish()
        } catch {
            view.finish()
            throw error
        }
        switch outcome {
        case .complete:
            return ClientExit.success
        case .removed:
            Terminal.standardError("packd \(command): pack \(packID) was deleted\n")
            return ClientExit.packFailed
        case .failed(let error):
            Terminal.standardError("packd \(command): " + failureReport(error) + "\n")
            return ClientExit.packFailed
        }
    }

    /// "pack 3 failed: code: detail" and the first failed resources, read from the server (the
    /// event may not carry the error: a stream that starts after the failure has only a snapshot).
    private func failureReport(_ eventError: PackError?) -> String {
        let error = eventError ?? (try? client.get(Pack.self, "/v1/packs/\(packID)"))?.error
        var report = "pack \(packID) failed" + (error.map { ": " + PackText.describe($0) } ?? "")
        if let failures = try? client.get(ResourceErrorList.self, "/v1/packs/\(packID)/errors?limit=\(Self.listedFailures)"),
           !failures.errors.isEmpty {
            for failure in failures.errors {
                report += "\n  \(PackText.reason(status: failure.status, error: failure.error, attempts: failure.attempts)): \(failure.url)"
            }
            if failures.total > Int64(failures.errors.count) {
                report += "\n  … \(HumanUnits.count(failures.total - Int64(failures.errors.count))) more (packd show \(packID))"
            }
        }
        return report
    }
}
