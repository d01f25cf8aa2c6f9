package import Clocks
package import CoreMetrics
package import DatabaseEngine
import Entitlements
import Logging
package import ReceiptCore
import Storage

extension UseCaseContext {
    /// A context for a use case under test: `database`, the clocks given (monotonic time moved by
    /// hand unless told otherwise), a quiet log, and no entitlement rules unless `state` has some.
    package static func testing(
        _ database: DatabaseQueue, clock: WallClock, monotonic: any MonotonicClock = ManualMonotonicClock(),
        state: SubscriberState = SubscriberState(
            settings: EntitlementSettings(rules: EntitlementRules([:]), catalog: Catalog(), policy: DerivationPolicy())),
        metrics: any MetricsFactory = NOOPMetricsHandler.instance
    ) -> UseCaseContext {
        UseCaseContext(
            database: database, state: state, logger: Logger(label: "test"), clock: clock, monotonic: monotonic, metrics: metrics)
    }
}
