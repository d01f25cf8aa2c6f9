/// An entitlement given by a person rather than bought: support's answer to an outage or a
/// complaint. It is a fact like a purchase: stored with who gave it and why, derived at `now`
/// like any other grant, and its grant, revocation and end are lifecycle events.
package struct Promotion: Sendable, Equatable {
    /// Storage's id: the promotion's identity in events (`promotional_grant:<id>`).
    package var id: Int64
    /// The entitlement it grants (a name of the configured rules, or any other name).
    package var entitlement: String
    package var startsAt: Int64
    package var expiresAt: Int64
    /// Who gave it (an API key's fingerprint) and why, in their words.
    package var grantedBy: String
    package var reason: String
    /// Revoked before its end, by whom and why.
    package var revokedAt: Int64?
    package var revokedBy: String?
    package var revokeReason: String?

    package init(
        id: Int64, entitlement: String, startsAt: Int64, expiresAt: Int64, grantedBy: String, reason: String,
        revokedAt: Int64? = nil, revokedBy: String? = nil, revokeReason: String? = nil
    ) {
        self.id = id
        self.entitlement = entitlement
        self.startsAt = startsAt
        self.expiresAt = expiresAt
        self.grantedBy = grantedBy
        self.reason = reason
        self.revokedAt = revokedAt
        self.revokedBy = revokedBy
        self.revokeReason = revokeReason
    }

    /// When it stops granting: its end, or its revocation if that came first.
    package var endsAt: Int64 { min(expiresAt, revokedAt ?? .max) }

    /// Whether it grants at `now`.
    package func isActive(at now: Int64) -> Bool { startsAt <= now && now < endsAt }

    /// `active`, `revoked`, `expired`, or `scheduled` (starts later).
    package func state(at now: Int64) -> String {
        if now < startsAt { return "scheduled" }
        if let revoked = revokedAt, revoked <= now, revoked < expiresAt { return "revoked" }
        return now < expiresAt ? "active" : "expired"
    }

    /// Why it grants (or no longer does) at `now`, for a person.
    package func explanation(at now: Int64) -> Explanation {
        let state = state(at: now)
        let given = "given by \(grantedBy) at \(CivilTime.rfc3339(startsAt)) because: \(reason)"
        let decision =
            switch state {
            case "active": "Entitled: a promotional entitlement \(given); it ends at \(CivilTime.rfc3339(expiresAt)), after now."
            case "scheduled": "Not entitled yet: a promotional entitlement \(given) starts after now."
            case "revoked":
                "Not entitled: a promotional entitlement \(given) was revoked at \(CivilTime.rfc3339(revokedAt ?? 0))"
                    + " by \(revokedBy ?? "?")" + (revokeReason.map { " because: \($0)" } ?? "") + "."
            default: "Not entitled: a promotional entitlement \(given) ended at \(CivilTime.rfc3339(expiresAt))."
            }
        return Explanation(
            rule: "promotional_\(state)", decision: decision,
            facts: [
                Fact("promotion_id", .number(id)), Fact("starts_at", .time(startsAt)), Fact("expires_at", .time(expiresAt)),
                Fact("granted_by", .text(grantedBy)), Fact("reason", .text(reason)),
            ]
                + [
                    Fact.time("revoked_at", revokedAt), Fact.text("revoked_by", revokedBy),
                    Fact.text("revoke_reason", revokeReason),
                ].compactMap { $0 } + [Fact("compared_at", .time(now))])
    }
}
