/// Entity-tag comparison for conditional requests (RFC 9110 §8.8.3, §13.1.2).
public enum EntityTag {
    /// Whether `tag` weakly matches one of the comma-separated tags of an `If-None-Match` value, or
    /// the value is `*`. Weak comparison ignores the `W/` prefix on either side.
    public static func weakMatch(_ tag: String, anyOf list: String) -> Bool {
        let opaque = Array(tag.utf8.starts(with: "W/".utf8) ? tag.utf8.dropFirst(2) : tag.utf8[...])
        for candidate in list.httpListElements() {
            let bytes = candidate.utf8
            if bytes.elementsEqual("*".utf8) { return true }
            let weak = bytes.starts(with: "W/".utf8)
            if (weak ? bytes.dropFirst(2) : bytes[...]).elementsEqual(opaque) { return true }
        }
        return false
    }
}
