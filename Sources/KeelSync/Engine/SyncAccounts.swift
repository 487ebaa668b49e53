public import KeelCore
public import KeelStore

/// The active account's sync, switched safely (MOB-DATA-006): before another account's vault opens, the
/// previous account's engine is stopped — its calls in flight cancelled, nothing of it running — so its
/// changes are never sent with the new account's credentials and its late answers are written nowhere.
///
/// ```swift
/// let accounts = SyncAccounts(vaults: vaults) { vault in
///     try SyncEngine(vault: vault, remote: remote(for: vault.account), policies: policies, offline: offline)
/// }
/// let engine = try await accounts.activate(alice)
/// ```
public actor SyncAccounts {
    /// The vaults the accounts live in.
    public nonisolated let vaults: Vaults
    let makeEngine: @Sendable (Vault) async throws -> SyncEngine
    /// Where the engines keep their outbox (what a sign-out counts when no engine runs).
    public nonisolated let storage: SyncStorage

    /// The active account's engine, if one is active.
    public private(set) var engine: SyncEngine?
    /// One switch at a time: a second call waits until the first has stopped, closed and opened.
    private let turnstile = Turnstile()

    /// Accounts over `vaults`; `makeEngine` builds an engine for a freshly opened vault, with that account's
    /// own remote (credentials), keeping its data in `storage`'s datasets.
    public init(
        vaults: Vaults, storage: SyncStorage = .default,
        makeEngine: @escaping @Sendable (Vault) async throws -> SyncEngine
    ) {
        self.vaults = vaults
        self.storage = storage
        self.makeEngine = makeEngine
    }

    /// Makes `account` the active one: stops the current engine (waiting until it is idle), closes its
    /// vault, opens `account`'s vault and returns its engine. The same account again returns its engine.
    public func activate(_ account: AccountID) async throws -> SyncEngine {
        await turnstile.enter()
        defer { turnstile.leave() }
        if let engine, engine.vault.account == account, engine.vault.isOpen, await !engine.isStopped {
            return engine
        }
        await stopCurrent()
        let vault = try await vaults.switchAccount(to: account)
        let engine = try await makeEngine(vault)
        self.engine = engine
        return engine
    }

    /// Stops the active account's sync and closes its vault (the app goes to a signed-out screen, or the
    /// account is being switched offline).
    public func deactivate() async {
        await turnstile.enter()
        defer { turnstile.leave() }
        await stopCurrent()
        await vaults.close()
    }

    /// Stops the active account's sync, then signs it out (its vault purged as the inventory says).
    ///
    /// - Parameter discardingUnsent: whether changes the server never confirmed may go with the vault. By
    ///   default they may not: with changes outstanding the sign-out throws ``SyncError`` `unsentChanges`
    ///   and purges nothing, so that an app signing out on an error (a 401) never loses the user's work
    ///   without a word. Ask the user (``SyncEngine/outstandingCount()`` says how many), then sign out again
    ///   with `true` — or sign in again and let the changes go out. The count is taken before the engine
    ///   stops and again after (a change may commit in between); when only the second finds one, the
    ///   account gets a new engine — read ``engine`` again (the one the app held is stopped) — or none, if it
    ///   cannot be made (then ``activate(_:)`` again).
    ///
    /// Without an engine (one that could not be made), the open vault's outbox is counted by ``storage``'s
    /// names: pass the app's own ``SyncStorage`` to ``init(vaults:storage:makeEngine:)`` when it is not the
    /// default.
    ///
    /// - Parameter account: the account signing out, for when no vault is open — one that could not be
    ///   opened (written by a newer version of the app, a failed migration) still has its logout datasets
    ///   deleted, by its manifest (``Vaults/logout(_:)``), when `discardingUnsent` (its changes cannot be
    ///   counted: without it, `unsentChanges`). Without `account`, nothing open means nothing deleted.
    public func signOut(discardingUnsent: Bool = false, account: AccountID? = nil) async throws -> PurgeReport {
        await turnstile.enter()
        defer { turnstile.leave() }
        // No vault open (it could not be opened: written by a newer app, a failed migration): `account`'s
        // logout datasets are deleted by its manifest — its changes cannot be counted, nor sent.
        func logoutWithoutVault() async throws -> PurgeReport {
            if let account { return try await vaults.logout(account) }
            return try await vaults.logout()
        }
        guard !discardingUnsent else {
            await stopCurrent()
            if await vaults.active == nil { return try await logoutWithoutVault() }
            return try await vaults.logout()
        }
        // Counted in the vault that would be purged — the active one, whether an engine runs on it or not (an
        // app whose engine could not be made, no token, signs out on that error too); read from the vault, so
        // that an engine the app already stopped is no obstacle.
        guard let vault = await vaults.active else {
            await stopCurrent()
            // Nothing open to count: an account's vault that cannot be opened is signed out only when its
            // unsent changes may go (found in a review: they were deleted without being counted).
            if let account {
                throw SyncError(
                    code: .unsentChanges, subject: account.rawValue,
                    message:
                        "\(account.rawValue)'s vault is not open, so its unsent changes cannot be counted: sign out with discardingUnsent to delete them"
                )
            }
            return try await vaults.logout()
        }
        let outbox = engine.map { $0.vault === vault ? $0.storage.outbox : storage.outbox } ?? storage.outbox
        try await requireNothingUnsent(in: vault, outbox)
        // Stopped, then counted again: a change that committed between the count and the stop would go with
        // the vault. Then the account keeps an engine, as if nothing happened.
        let stopped = engine
        await stopCurrent()
        do {
            try await requireNothingUnsent(in: vault, outbox)
        } catch {
            if stopped != nil, vault.isOpen { engine = try? await makeEngine(vault) }
            throw error
        }
        return try await vaults.logout()
    }

    /// Throws ``SyncError`` `unsentChanges` when `outbox` in `vault` holds a change.
    private func requireNothingUnsent(in vault: Vault, _ outbox: String) async throws {
        let outstanding = try await vault.read(outbox) { try $0.count() }
        guard outstanding == 0 else {
            throw SyncError(
                code: .unsentChanges,
                message:
                    "\(outstanding) change(s) the server never confirmed would be lost; nothing was signed out (sign out with discardingUnsent: true to lose them)"
            )
        }
    }

    /// Stops the active account's sync if it is `account`, then deletes the account's data.
    public func deleteAccount(_ account: AccountID) async throws -> PurgeReport {
        await turnstile.enter()
        defer { turnstile.leave() }
        if engine?.vault.account == account { await stopCurrent() }
        return try await vaults.deleteAccount(account)
    }

    private func stopCurrent() async {
        guard let engine else { return }
        self.engine = nil
        await engine.stop()
    }
}
