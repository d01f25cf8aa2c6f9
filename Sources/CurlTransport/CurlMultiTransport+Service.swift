import ServiceLifecycle

extension CurlMultiTransport: Service {
    /// Keeps the transfer thread until the service group shuts down, then stops it (transfers
    /// still running fail as transport errors). Last in the group's shutdown order: after the HTTP
    /// server has drained and the refresher has stopped, nothing is left to send.
    package func run() async throws {
        try? await gracefulShutdown()
        shutdown()
    }
}
