/// Whether a database changed between two moments, as seen from one connection: two stamps of the same
/// connection are equal only when no INSERT, UPDATE or DELETE ran on that connection in between and no
/// other connection (in this process or another) committed a change to the file.
///
/// For caches of state derived from the database that would otherwise be checked with queries at the
/// start of every transaction (the sync engine's outbox tail): take a stamp after a transaction's last
/// write, keep it with the cache, and trust the cache in a later transaction on the same connection only
/// when that transaction's stamp is equal. The comparison errs one way only: a write that was rolled back
/// still changes the stamp, so the cache is checked the slow way — a change is never missed.
///
/// Not seen: schema changes (CREATE, DROP) made on the same connection. Stamps of two connections (a
/// reader and the writer, a pool closed and opened again) are never equal.
package struct DatabaseChangeStamp: Hashable, Sendable {
    /// The connection (a number unique in the process).
    let connection: UInt64
    /// `PRAGMA data_version`: moves when another connection commits.
    let dataVersion: Int64
    /// `sqlite3_total_changes64`: rows this connection has inserted, updated or deleted.
    let changes: Int64
}
