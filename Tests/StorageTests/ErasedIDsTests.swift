import DatabaseEngine
import ReceiptTesting
import Testing

@testable import Storage

/// The digests of erased ids are kept a day; a digest stored by one build must be found by the next.
@Suite("Erased ids")
struct ErasedIDsTests {
    @Test func aDigestIsTheSHA256OfTheIdsBytesInLowercaseHex() {
        // Python: hashlib.sha256(b"eve").hexdigest(), and of "Zoe\u0308" in UTF-8.
        #expect(ErasedIDs.digest("eve") == "85262adf74518bbb70c7cb94cd6159d91669e5a81edf1efebd543eadbda9fa2b")
        #expect(ErasedIDs.digest("Zoe\u{0308}") == "c106d15587c5ec6c0b5a6d6ff0da1ac753c5921fafab25e962dd81b0b3f3f50f")
        #expect(ErasedIDs.digest("Zo\u{00EB}") != ErasedIDs.digest("Zoe\u{0308}"))
    }

    @Test(arguments: await testDialects())
    func anyErasedFindsEachOfManyIds(_ dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        try db.transaction { try ErasedIDs(db).record(["u3", "u11"], at: 100) }
        let ids = (0..<12).map { "u\($0)" }
        for count in 1...ids.count {
            let some = Array(ids.prefix(count))
            #expect(try ErasedIDs(db).anyErased(some, since: 100) == (count > 3), "\(count)")
            #expect(try ErasedIDs(db).anyErased(some, since: 101) == false)
        }
        #expect(try ErasedIDs(db).anyErased([], since: 0) == false)
        #expect(try ErasedIDs(db).anyErased(["u3", "u3"], since: 0))
    }
}
