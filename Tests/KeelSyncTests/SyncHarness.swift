import Foundation
import KeelContract
import KeelCore
import KeelHTTP
import KeelReference
import KeelStore
import KeelSync
import KeelTesting

/// A reference backend on loopback (its database in a temporary directory) and devices that sync with it:
/// each device its own data directory, key directory (a `FileKeyStore` outside the data) and vaults.
final class SyncWorld: Sendable {
    let directory: TemporaryDirectory
    let backend: ReferenceBackend

    init(prefix: String = "keel-sync", clock: WallClock = .system, maximumBodyBytes: Int = 64 * 1024 * 1024) throws {
        directory = try TemporaryDirectory(prefix: prefix)
        backend = try ReferenceBackend(
            configuration: .init(
                dataDirectory: directory.url("backend"), admin: true, clock: clock, random: .seeded(99),
                maximumBodyBytes: maximumBodyBytes))
    }

    /// A client of the backend; one attempt per call unless `attempts` says otherwise, short timeouts.
    func client(baseURL: URL? = nil, attempts: Int = 1, seed: UInt64 = 1) -> HTTPClient {
        HTTPClient(
            configuration: .init(
                baseURL: baseURL ?? backend.baseURL, random: .seeded(seed),
                policy: CallPolicy(attemptTimeout: .seconds(5), deadline: .seconds(10), maximumAttempts: attempts)))
    }

    func device(_ name: String) throws -> SyncDevice {
        try SyncDevice(world: self, name: name)
    }

    /// A token for `account`, through the backend's sign-in endpoint.
    func token(_ account: AccountID) async throws -> String {
        try await NotesRemote.signIn(account, client: client())
    }
}

/// One device: vaults in its own data directory, keys in its own key directory.
final class SyncDevice: Sendable {
    let world: SyncWorld
    let name: String
    let data: URL
    let keys: URL
    let vaults: Vaults

    /// Every engine gets ids and keys of its own (a seeded engine repeats its ids, as the system's never would).
    static let seeds = Locked<UInt64>(1000)

    init(world: SyncWorld, name: String) throws {
        self.world = world
        self.name = name
        data = world.directory.url("\(name)-data")
        keys = world.directory.url("\(name)-keys")
        vaults = try Vaults(
            dataDirectory: data, keyStore: try FileKeyStore(directory: keys, dataDirectories: [data]),
            inventory: NotesSync.inventory)
    }

    /// Opens `account`'s vault (switching) and an engine with a remote signed in as `account`.
    func engine(
        _ account: AccountID, token: String? = nil, client: HTTPClient? = nil, seed: UInt64? = nil,
        clock: WallClock = .system
    ) async throws -> SyncEngine {
        let vault = try await vaults.switchAccount(to: account)
        let remote = NotesRemote(
            client: client ?? world.client(), account: account, token: try await tokenOrSignIn(account, token))
        return try SyncEngine(
            vault: vault, remote: remote, policies: NotesSync.policies, offline: NotesSync.offline, clock: clock,
            random: .seeded(
                seed
                    ?? Self.seeds.withLock { next in
                        defer { next += 1 }
                        return next
                    }))
    }

    func tokenOrSignIn(_ account: AccountID, _ token: String?) async throws -> String {
        if let token { return token }
        return try await world.token(account)
    }
}

extension AccountID {
    static let alice = known("alice")
    static let bob = known("bob")

    private static func known(_ name: String) -> AccountID {
        do { return try AccountID(name) } catch { preconditionFailure("\(name) is a valid account id: \(error)") }
    }
}

/// A wall clock tests move by hand.
final class MovableWallClock: Sendable {
    private let now: Locked<Date>
    init(_ start: Date = Date(timeIntervalSince1970: 1_790_000_000)) { now = Locked(start) }
    var clock: WallClock { WallClock { self.now.withLock { $0 } } }
    func advance(by seconds: TimeInterval) { now.withLock { $0 += seconds } }
}

/// A port nothing listens on (a backend that is down): held bound without listening for the rest of the run,
/// so no other test's server can take it meanwhile (found in an outside audit: a port bound and closed at once
/// could be handed to a parallel test's server, and "offline" then reached it).
func deadBaseURL() throws -> URL {
    let port = try RefusingPort()
    heldDeadPorts.withLock { $0.append(port) }
    return port.baseURL
}

private let heldDeadPorts = Locked<[RefusingPort]>([])

extension JSONObject {
    static func note(_ title: String, body: String = "") -> JSONObject {
        ["title": .string(title), "body": .string(body)]
    }
}
