import Testing

@testable import AppStore

@Suite("Notification types, V1")
struct NotificationTypeV1Tests {
    @Test func everyDocumentedTypeReadsAsItsCaseAndAnotherAsSent() {
        #expect(NotificationTypeV1.known.count == 13)
        for type in NotificationTypeV1.known { #expect(NotificationTypeV1(type.rawValue) == type) }
        #expect(NotificationTypeV1("INTERACTIVE_RENEWAL") == .interactiveRenewal)
        #expect(NotificationTypeV1("RENEWAL_LATER") == .other("RENEWAL_LATER"))
    }
}
