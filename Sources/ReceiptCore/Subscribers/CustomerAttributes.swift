import Clocks
import DatabaseEngine
import Logging
import Storage

/// What an app says of its user (`$email`, `$displayName`, its own keys), as RevenueCat's SDKs set
/// it: kept under the person's canonical id, exported and erased with them, shown to support.
/// The newer write of a name wins, by the device's time, whatever order they arrive in.
package struct CustomerAttributes: UseCase, Sendable {
    package let context: UseCaseContext

    package init(context: UseCaseContext) {
        self.context = context
    }

    /// One attribute: its name, its value (nil: unset) and when the device changed it (epoch ms).
    package struct Attribute: Sendable, Equatable {
        package var name: String
        package var value: String?
        package var updatedAt: Int64

        package init(name: String, value: String?, updatedAt: Int64) {
            self.name = name
            self.value = value
            self.updatedAt = updatedAt
        }
    }

    /// Stores `attributes` for the person `appUserID` names.
    package func set(_ appUserID: String, _ attributes: [Attribute]) async throws(ReceiptError) {
        _ = try FieldRules.appUserID(appUserID)
        guard !attributes.isEmpty else { return }
        let began = clock.now()
        do {
            try await database.write { db in
                try AttributeStore(db).set(
                    attributes.map { .init(name: $0.name, value: $0.value, updatedAt: $0.updatedAt) }, for: appUserID,
                    began: began, now: began)
            }
        } catch is ErasedIDs.ErasedMeanwhile {
            throw .erasedMeanwhile
        } catch {
            logger.error("storing attributes failed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// The person's attributes that have a value, by name.
    package func read(_ appUserID: String) async throws(ReceiptError) -> [Attribute] {
        do {
            return try await database.read(replicaSeeing: [appUserID]) { db in
                try AttributeStore(db).attributes(of: appUserID).map {
                    Attribute(name: $0.name, value: $0.value, updatedAt: $0.updatedAt)
                }
            }
        } catch {
            logger.error("reading attributes failed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }
}
