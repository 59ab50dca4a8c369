import API
import Foundation
import Logging

/// Where `packd serve` takes the dashboard from: `--dashboard-dir` (the page: `index.html`
/// and its modules) and `--map-library-dir` (`maplibre-gl.js` and `.css`, installed from PyPI's
/// `maplibre` by `make dashboard-assets` or `make install`), each else found by `InstallLayout`
/// as `dashboard/` and `maplibre-gl/`. A configured directory that is missing is a configuration
/// error; a default one that is missing only turns the maps (or the whole dashboard) off.
struct DashboardFiles {
    var pageDirectory: String?
    var mapLibraryDirectory: String?

    /// Checks configured directories before the server binds (nil: use the defaults).
    static func checked(pageDirectory: (text: String, setting: String)?, mapLibraryDirectory: (text: String, setting: String)?)
        throws(ServerConfiguration.Invalid) -> DashboardFiles {
        if let page = pageDirectory, !FileManager.default.fileExists(atPath: page.text + "/index.html") {
            throw ServerConfiguration.Invalid(setting: page.setting, problem: "\(page.text) holds no index.html")
        }
        if let library = mapLibraryDirectory,
           !DashboardAssets.mapLibraryFiles.allSatisfy({ FileManager.default.fileExists(atPath: library.text + "/" + $0) }) {
            throw ServerConfiguration.Invalid(
                setting: library.setting, problem: "\(library.text) must hold \(DashboardAssets.mapLibraryFiles.joined(separator: " and "))")
        }
        return DashboardFiles(pageDirectory: pageDirectory?.text, mapLibraryDirectory: mapLibraryDirectory?.text)
    }

    /// Reads the files (at start, before the loop runs). Nil when there is no page to serve.
    func load(logger: Logger) -> DashboardAssets? {
        let pages = pageDirectory.map { [$0] } ?? InstallLayout.candidates("dashboard")
        guard let page = pages.first(where: { FileManager.default.fileExists(atPath: $0 + "/index.html") }) else {
            logger.warning("dashboard files not found; / and /dashboard/ answer 404", metadata: ["looked_at": "\(pages.joined(separator: ", "))"])
            return nil
        }
        let libraries = mapLibraryDirectory.map { [$0] } ?? InstallLayout.candidates("maplibre-gl")
        let library = libraries.first { FileManager.default.fileExists(atPath: $0 + "/maplibre-gl.js") }
        do {
            let assets = try DashboardAssets.load(pageDirectory: page, mapLibraryDirectory: library)
            for reason in assets.skipped { logger.warning("dashboard file skipped", metadata: ["reason": "\(reason)"]) }
            if assets.hasMapLibrary {
                logger.info("serving the dashboard with MapLibre GL JS", metadata: ["directory": "\(page)", "maplibre_directory": "\(library ?? "")"])
            } else {
                logger.notice("serving the dashboard without maps: MapLibre GL JS not found; `make dashboard-assets` installs it", metadata: [
                    "directory": "\(page)", "looked_at": "\(libraries.joined(separator: ", "))",
                ])
            }
            return assets
        } catch {
            logger.error("dashboard not served", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
