// The platform ladder for the transport a client uses when it is given none.
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension HTTPClient.Configuration {
    /// The transport of a client configured without one: ``SocketTransport`` where URLSession comes from
    /// FoundationNetworking (Linux), which keeps downloading after a cancel and so cannot bound a response's
    /// memory; ``URLSessionTransport`` on Apple platforms.
    public static func makeDefaultTransport() -> any HTTPTransport {
        #if canImport(FoundationNetworking)
            SocketTransport()
        #else
            URLSessionTransport()
        #endif
    }
}
