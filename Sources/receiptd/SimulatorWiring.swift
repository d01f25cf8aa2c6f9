import AppStoreSimulator
import Clocks
import Logging
import ReceiptService

/// The built-in App Store simulator, when `appStore.simulator` is on: offline development, where
/// Apple is a loopback server of our own. The executable wires it; the service only sees URLs.
enum SimulatorWiring {
    /// Starts the simulator on a free loopback port and points `configuration` at it; nil (and
    /// `configuration` unchanged) when the simulator is off.
    static func start(_ configuration: inout ServiceConfiguration, logger: Logger, clock: WallClock = .system) throws
        -> AppStoreSimulator.Served?
    {
        let settings = configuration.appStore
        guard settings.simulator else { return nil }
        let simulator = try AppStoreSimulator.serve(
            configuration: .init(bundleID: settings.bundleIDs[0], sharedSecret: settings.sharedSecret), now: clock,
            logger: logger)
        configuration.appStore.productionURL = simulator.productionURL
        configuration.appStore.sandboxURL = simulator.sandboxURL
        configuration.appStore.allowHTTP = true
        logger.notice("App Store simulator in use; receipts are verified offline", metadata: ["port": "\(simulator.port)"])
        return simulator
    }
}
