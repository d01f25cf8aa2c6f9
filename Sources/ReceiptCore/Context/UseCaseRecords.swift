package import Storage

// Some use cases answer with stored records as they are: plain values with nothing to hide and no
// behaviour to call. They are named here, as part of ReceiptCore's vocabulary, so the HTTP edge
// speaks to the use cases only and never imports Storage (Docs/architecture.md).

/// A notification as stored, listed by ``Listings/notifications(limit:before:filter:)``.
package typealias NotificationRecord = Storage.NotificationRecord
/// What ``Listings/notifications(limit:before:filter:)`` keeps.
package typealias NotificationFilter = Storage.NotificationStore.Filter
/// A difference `shadow` mode found, listed by ``Listings/shadowDiffs(limit:before:)``.
package typealias ShadowDiffRecord = Storage.ShadowDiffRecord
/// A purchase that moved between app users, listed by ``Listings/sharedReceipts(moreThan:limit:after:)``.
package typealias SharedReceipt = Storage.SharedReceipt
/// An Apple Account posted under several app user ids, listed by ``Listings/sharedAppAccounts(moreThan:limit:after:)``.
package typealias SharedAppAccount = Storage.SharedAppAccount
/// A Retention Messaging answer as recorded, listed by ``AnswerRetentionRequest/answers(of:limit:)``.
package typealias RetentionAnswerRecord = Storage.RetentionAnswerRecord
/// Retention answers' outcomes by rule and message (``AnswerRetentionRequest/outcomes(since:)``).
package typealias RetentionOutcome = Storage.RetentionOutcome
/// A webhook delivery, listed by ``WebhookOperations``.
package typealias WebhookDelivery = Storage.WebhookDelivery
/// What ``EraseSubscriber`` removed or blanked, table by table.
package typealias ErasureOutcome = Storage.Erasure.Outcome
/// A mass renewal-date extension and how far it has come (``MassExtensions``).
package typealias MassExtensionRecord = Storage.MassExtensionRecord
