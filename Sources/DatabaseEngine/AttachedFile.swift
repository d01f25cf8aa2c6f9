/// A file of its own beside an SQLite database (Storage's chart rollups): attached to every
/// connection under `name`, written by a writer of its own (``DatabaseQueue``), so its writes
/// never wait for the database's. It holds only what can be derived again, so it has no
/// migrations: `prepare` makes it hold what it should, emptying it when it does not.
package struct AttachedFile: Sendable {
    /// The schema name it is attached as, and what its file's name adds before the extension.
    package var name: String
    /// Makes the file hold what it should, in `schema` (`main` on its own connection, else `name`).
    package var prepare: @Sendable (_ db: Database, _ schema: String) throws -> Void

    package init(name: String, prepare: @escaping @Sendable (_ db: Database, _ schema: String) throws -> Void) {
        self.name = name
        self.prepare = prepare
    }

    /// Its file beside the database at `path`: its name with `-` and ``name`` before the extension
    /// (`data/receiptd.sqlite`: `data/receiptd-rollups.sqlite`).
    package func path(beside path: String) -> String {
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        guard let dot = path[slash...].lastIndex(of: "."), dot != slash else { return path + "-" + name }
        return path[..<dot] + "-" + name + path[dot...]
    }
}
