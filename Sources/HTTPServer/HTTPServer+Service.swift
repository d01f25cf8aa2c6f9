public import ServiceLifecycle

extension HTTPServer: Service {
    /// Binds (unless ``start()`` already did) and serves until the service group shuts down
    /// gracefully (SIGTERM, SIGINT) or is cancelled; then drains as ``shutdown()`` does.
    public func run() async throws {
        if port == 0 { try start() }
        await withTaskCancellationOrGracefulShutdownHandler {
            await waitUntilStopped()
        } onCancelOrGracefulShutdown: {
            self.shutdown()
        }
    }
}
