/// Who is asking, as far as receiptd can tell: the key's role, never the ids in the request.
///
/// An app's key is public (it ships in every copy of the app), so anything an ``app`` may call,
/// anyone may call, for any app user id: its answers carry no other person's purchase
/// identifiers, and it never moves what someone else holds without the device's proof
/// (Docs/security.md "The public key is public").
package enum Caller: Sendable, Equatable {
    /// A public key: a mobile app, or anyone who copied its key.
    case app
    /// A secret key: the operator's backend, support, the console.
    case backend
}

/// What a purchase posted to be stored proves about who has it.
package enum Possession: Sendable, Equatable {
    /// The device's proof (a receipt, a signed transaction, a purchase token), or a backend's word:
    /// the ownership policy decides.
    case proven
    /// A bare transaction id from an app. Apple prints it in the customer's e-mail, so it proves
    /// nothing: it may attach a purchase nobody holds, or one whose `appAccountToken` names the
    /// poster; a purchase someone else holds stays theirs (``ReceiptError/proofRequired``).
    case bareID
}
