import FoundationEssentials
import JSON
import Testing

@testable import GooglePlay

@Suite("Google Play: a pushed developer notification read")
struct DeveloperNotificationTests {
    static func push(_ notification: String, id: String = "136969346945", urlSafe: Bool = false) -> [UInt8] {
        var data = Data(notification.utf8).base64EncodedString()
        if urlSafe { data = String(data.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 }.filter { $0 != "=" }) }
        return Array(
            #"{"message":{"attributes":{},"data":"\#(data)","messageId":"\#(id)"},"subscription":"projects/p/subscriptions/s"}"#
                .utf8)
    }

    @Test func eachKindIsRead() throws {
        let subscription = try PlayPush(
            body: Self.push(
                #"{"version":"1.0","packageName":"com.example.app","eventTimeMillis":"1503349566168","subscriptionNotification":{"version":"1.0","notificationType":4,"purchaseToken":"tok.1","subscriptionId":"monthly"}}"#
            ))
        #expect(subscription.messageID == "136969346945" && subscription.subscription == "projects/p/subscriptions/s")
        #expect(
            subscription.notification
                == .init(
                    packageName: "com.example.app", eventTime: 1_503_349_566_168,
                    kind: .subscription(type: 4, purchaseToken: "tok.1")))
        #expect(
            subscription.notification.typeName == "SUBSCRIPTION_PURCHASED" && subscription.notification.isSubscription == true)
        let product = try PlayPush(
            body: Self.push(
                #"{"packageName":"a","eventTimeMillis":1,"oneTimeProductNotification":{"notificationType":2,"purchaseToken":"t","sku":"coins"}}"#,
                urlSafe: true))
        #expect(product.notification.kind == .oneTimeProduct(type: 2, purchaseToken: "t", productID: "coins"))
        #expect(product.notification.typeName == "ONE_TIME_PRODUCT_CANCELED")
        let voided = try PlayPush(
            body: Self.push(
                #"{"packageName":"a","eventTimeMillis":"2","voidedPurchaseNotification":{"purchaseToken":"t","orderId":"GPA.1","productType":1,"refundType":1}}"#
            ))
        #expect(voided.notification.kind == .voidedPurchase(purchaseToken: "t", orderID: "GPA.1", productType: 1, refundType: 1))
        #expect(voided.notification.typeName == "VOIDED_PURCHASE" && voided.notification.isSubscription == true)
        let test = try PlayPush(
            body: Self.push(#"{"packageName":"a","eventTimeMillis":"3","testNotification":{"version":"1.0"}}"#))
        #expect(test.notification.kind == .test && test.notification.purchaseToken == nil)
        let future = try PlayPush(
            body: Self.push(
                #"{"packageName":"a","eventTimeMillis":"4","subscriptionNotification":{"notificationType":99,"purchaseToken":"t"}}"#
            ))
        #expect(future.notification.typeName == "SUBSCRIPTION_99")
        let newKind = try PlayPush(
            body: Self.push(#"{"packageName":"a","eventTimeMillis":"5","pendingRefundReviewNotification":{"purchaseToken":"t"}}"#)
        )
        #expect(
            newKind.notification.kind == .other("pendingRefundReviewNotification") && newKind.notification.purchaseToken == nil)
        #expect(newKind.notification.typeName == "OTHER_pendingRefundReviewNotification")
    }

    @Test func whatIsNotAPushIsRefused() {
        for body in [
            "[]", #"{"message":{}}"#, #"{"message":{"messageId":"1","data":"%%%"}}"#,
            String(decoding: Self.push(#"{"eventTimeMillis":"1","testNotification":{}}"#), as: UTF8.self),
            String(decoding: Self.push(#"{"packageName":"a","testNotification":{}}"#), as: UTF8.self),
            String(decoding: Self.push(#"{"packageName":"a","eventTimeMillis":"1"}"#), as: UTF8.self),
            String(
                decoding: Self.push(
                    #"{"packageName":"a","eventTimeMillis":"1","subscriptionNotification":{"notificationType":1}}"#),
                as: UTF8.self),
            String(decoding: Self.push("{}", id: ""), as: UTF8.self),
        ] {
            #expect(throws: GooglePlayError.self, "\(body)") { _ = try PlayPush(body: Array(body.utf8)) }
        }
    }
}
