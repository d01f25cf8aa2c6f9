/// Entity-tag comparison for conditional requests (RFC 9110 §8.8.3, §13.1.2).
public enum EntityTag {
    /// Whether `tag` weakly matches one of the comma-separated tags of an `If-None-Match` value, or
    /// the value is `*`. Weak comparison ignores the `W/` prefix on either side.
    public static func weakMatch(_ tag: String, anyOf list: String) -> Bool {
        let opaque = tag.hasPrefix("W/") ? tag.dropFirst(2) : tag[...]
        for item in list.split(separator: ",") {
            let candidate = item.trimmingCharacters(in: " \t")
            if candidate == "*" { return true }
            let candidateOpaque = candidate.hasPrefix("W/") ? candidate.dropFirst(2) : candidate[...]
            if candidateOpaque == opaque { return true }
        }
        return false
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> Substring {
        var s = self
        while let c = s.first, set.contains(c) { s = s.dropFirst() }
        while let c = s.last, set.contains(c) { s = s.dropLast() }
        return s
    }
}
