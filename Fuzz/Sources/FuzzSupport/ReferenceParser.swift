import CLLHTTP

/// Drives llhttp 8.1 (Debian's node-llhttp sources, strict: no lenient flags) over the same bytes
/// and records the same facts `OurParser` records.
///
/// Message ends are found by pausing in `on_message_complete`: llhttp then stops right after the
/// message's last byte and `llhttp_get_error_pos` says where.
public enum ReferenceParser {
    public static func trace(_ input: [UInt8]) -> ParseTrace {
        let state = Recorder()
        var settings = llhttp_settings_t()
        llhttp_settings_init(&settings)
        settings.on_message_begin = { p in
            recorder(p).begin()
            return 0
        }
        settings.on_method = { p, at, n in
            recorder(p).method.append(at, n)
            return 0
        }
        settings.on_url = { p, at, n in
            recorder(p).target.append(at, n)
            return 0
        }
        settings.on_header_field = { p, at, n in
            recorder(p).field(at, n)
            return 0
        }
        settings.on_header_value = { p, at, n in
            recorder(p).value(at, n)
            return 0
        }
        settings.on_headers_complete = { p in
            recorder(p).headersComplete(p!)
            return 0
        }
        settings.on_body = { p, at, n in
            recorder(p).body.append(at, n)
            return 0
        }
        settings.on_message_complete = { p in
            recorder(p).messageComplete(p!)
            return Int32(HPE_PAUSED.rawValue)
        }

        var parser = llhttp_t()
        llhttp_init(&parser, HTTP_REQUEST, &settings)
        parser.data = Unmanaged.passUnretained(state).toOpaque()
        defer { withExtendedLifetime(state) {} }

        var trace = ParseTrace()
        input.withUnsafeBufferPointer { all in
            let base = UnsafeRawPointer(all.baseAddress ?? UnsafePointer(bitPattern: 1)!)
                .assumingMemoryBound(to: CChar.self)
            var offset = 0
            while true {
                let status = llhttp_execute(&parser, base + offset, all.count - offset)
                switch status {
                case HPE_OK:
                    trace.outcome = .needMore
                    trace.pendingHead = state.pendingHead
                    return
                case HPE_PAUSED, HPE_PAUSED_UPGRADE:
                    let end = all.count == 0 ? 0 : base.distance(to: llhttp_get_error_pos(&parser))
                    guard var message = state.completed else {
                        // Paused for an upgrade before our message callback (no message recorded).
                        trace.outcome = .stopped
                        return
                    }
                    state.completed = nil
                    message.end = end
                    trace.messages.append(message)
                    if status == HPE_PAUSED_UPGRADE || state.upgrade || !message.keepAlive {
                        trace.outcome = .stopped
                        return
                    }
                    llhttp_resume(&parser)
                    offset = end
                    if offset == all.count {
                        trace.outcome = .needMore
                        return
                    }
                default:
                    trace.outcome = .error(String(cString: llhttp_errno_name(status)))
                    return
                }
            }
        }
        return trace
    }

    /// What the callbacks have seen of the current message.
    final class Recorder {
        var method: [UInt8] = []
        var target: [UInt8] = []
        var headers: [ParseTrace.Field] = []
        var trailers: [ParseTrace.Field] = []
        var body: [UInt8] = []
        var name: [UInt8] = []
        var value: [UInt8] = []
        var inValue = false
        var headersDone = false
        var version = ParseTrace.Version(major: 0, minor: 0)
        var upgrade = false
        var completed: ParseTrace.Message?

        func begin() {
            method = []
            target = []
            headers = []
            trailers = []
            body = []
            name = []
            value = []
            inValue = false
            headersDone = false
            upgrade = false
        }

        func field(_ at: UnsafePointer<CChar>?, _ n: Int) {
            if inValue { flushField() }
            name.append(at, n)
        }

        func value(_ at: UnsafePointer<CChar>?, _ n: Int) {
            inValue = true
            value.append(at, n)
        }

        /// Ends the field in progress, if any (a field with an empty value has no value callback).
        func flushField() {
            guard !name.isEmpty || inValue else { return }
            let field = ParseTrace.Field(name: name, value: value)
            if headersDone { trailers.append(field) } else { headers.append(field) }
            name = []
            value = []
            inValue = false
        }

        func headersComplete(_ p: UnsafeMutablePointer<llhttp_t>) {
            flushField()
            headersDone = true
            version = .init(major: Int(llhttp_get_http_major(p)), minor: Int(llhttp_get_http_minor(p)))
        }

        func messageComplete(_ p: UnsafeMutablePointer<llhttp_t>) {
            flushField()
            upgrade = llhttp_get_upgrade(p) != 0
            completed = message(keepAlive: llhttp_should_keep_alive(p) != 0)
            headersDone = false
        }

        /// The head read so far, once the head is complete and until the message is.
        var pendingHead: ParseTrace.Message? { headersDone ? message(keepAlive: true) : nil }

        private func message(keepAlive: Bool) -> ParseTrace.Message {
            ParseTrace.Message(
                method: String(decoding: method, as: UTF8.self), target: String(decoding: target, as: UTF8.self),
                version: version, headers: headers, trailers: trailers, body: body, end: -1, keepAlive: keepAlive)
        }
    }
}

private func recorder(_ p: UnsafeMutablePointer<llhttp_t>?) -> ReferenceParser.Recorder {
    Unmanaged<ReferenceParser.Recorder>.fromOpaque(p!.pointee.data).takeUnretainedValue()
}

extension [UInt8] {
    fileprivate mutating func append(_ at: UnsafePointer<CChar>?, _ n: Int) {
        guard let at, n > 0 else { return }
        append(contentsOf: UnsafeRawBufferPointer(start: at, count: n))
    }
}
