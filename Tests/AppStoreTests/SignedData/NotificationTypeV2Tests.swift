import Testing

@testable import AppStore

@Suite("Notification types, V2")
struct NotificationTypeV2Tests {
    @Test func everyDocumentedTypeReadsAsItsCaseAndBack() {
        #expect(NotificationTypeV2.known.count == 23)
        for type in NotificationTypeV2.known {
            #expect(NotificationTypeV2(type.rawValue) == type)
            if case .other = type { Issue.record("\(type) is documented") }
        }
        #expect(NotificationTypeV2("DID_RENEW") == .didRenew && NotificationTypeV2.rescindConsent.rawValue == "RESCIND_CONSENT")
    }

    @Test func aTypeAppleAddsLaterIsKeptAsSent() {
        #expect(NotificationTypeV2("SOMETHING_NEW") == .other("SOMETHING_NEW"))
        #expect(NotificationTypeV2("SOMETHING_NEW").rawValue == "SOMETHING_NEW")
        // Compared as bytes: a lower-case or padded spelling is not the documented type.
        #expect(NotificationTypeV2("did_renew") == .other("did_renew"))
        #expect(NotificationTypeV2("DID_RENEW ") == .other("DID_RENEW "))
    }

    @Test func everyDocumentedSubtypeReadsAsItsCaseAndAnotherAsSent() {
        #expect(NotificationSubtypeV2.known.count == 17)
        for subtype in NotificationSubtypeV2.known { #expect(NotificationSubtypeV2(subtype.rawValue) == subtype) }
        #expect(NotificationSubtypeV2("AUTO_RENEW_DISABLED") == .autoRenewDisabled)
        #expect(NotificationSubtypeV2("SOMETHING_NEW") == .other("SOMETHING_NEW"))
    }
}
