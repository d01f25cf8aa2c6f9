package import DatabaseEngine
import Identifiers

/// A person's attributes (Migrations/0037_attributes.sql): what an app says of its user
/// (`$email`, `$displayName`, its own keys), set through RevenueCat's SDKs. Kept under the
/// person's canonical id; the newer of two writes of a name wins, by the device's time.
package struct AttributeStore {
    private let db: Database

    package init(_ database: Database) { db = database }

    /// One attribute: its name, its value (nil: unset) and when the device changed it.
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

    /// Sets `attributes` of the person `appUserID` names (an alias: its subscriber), in one
    /// transaction: each name's write applies unless a newer one is stored. Throws
    /// ``ErasedIDs/ErasedMeanwhile`` when the person was erased after `began`: nothing is written.
    package func set(_ attributes: [Attribute], for appUserID: String, began: Int64, now: Int64) throws {
        try db.transaction {
            try db.lock(["subscriber:" + appUserID])
            let canonical = try ReceiptStore(db).canonical(appUserID)
            try ErasedIDs(db).check([appUserID, canonical], since: began)
            let upsert = try db.cached(
                """
                INSERT INTO attributes (app_user_id, name, value, updated_at, recorded_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (app_user_id, name) DO UPDATE SET value = excluded.value,
                    updated_at = excluded.updated_at, recorded_at = excluded.recorded_at
                WHERE excluded.updated_at >= attributes.updated_at
                """)
            for attribute in attributes {
                try upsert.bind([canonical, attribute.name, attribute.value, attribute.updatedAt, now]).run()
            }
        }
    }

    /// The person's attributes that have a value, by name in byte order.
    package func attributes(of appUserID: String) throws -> [Attribute] {
        let canonical = try ReceiptStore(db).canonical(appUserID)
        let q = try db.cached(
            "SELECT name, value, updated_at FROM attributes WHERE app_user_id = ? AND value IS NOT NULL"
        ).bind([canonical])
        var found: [Attribute] = []
        while try q.step() { found.append(Attribute(name: q.text(0)!, value: q.text(1), updatedAt: q.int(2))) }
        return found.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }
}
