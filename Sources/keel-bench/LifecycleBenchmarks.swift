import Foundation
import KeelCore
import KeelLifecycle

/// Restoring navigation (issue #13): the whole restore pipeline against decoding the snapshot alone.
enum LifecycleBenchmarks {
    /// A root and a chain of 49 account-scoped screens (`r1` under the root, `r2` under `r1`, ...), each
    /// with a parameter, the last ones holding drafts.
    static func contract() throws -> NavigationContract {
        var routes = [Route("r0", access: .public, isRoot: true), Route("signIn", access: .public, isModal: true)]
        for level in 1..<50 {
            routes.append(
                Route(
                    "r\(level)", parent: "r\(level - 1)", access: level < 3 ? .signedIn : .account,
                    parameters: ["id"], input: level % 5 == 0 ? .init(policy: .saveDraft) : nil))
        }
        return try NavigationContract(routes)
    }

    static let restore = Benchmark(
        name: "lifecycle.restore",
        unit: "µs per restore",
        goal:
            "ratio ≤ 1.5 (decode + migrate + session and access re-check of a 50-entry stack with 100 drafts vs JSONDecoder of the same snapshot)",
        operations: 200,
        prepare: {
            let navigator = Navigator(contract: try contract())
            let alice = try AccountID("alice")
            var state = navigator.initialState
            state = navigator.reduce(state, .signIn(account: alice)).state
            for level in 1..<50 {
                state = navigator.reduce(state, .open(route: "r\(level)", parameters: ["id": "7"])).state
            }
            guard state.stack.count == 50 else { throw BenchError("the stack has \(state.stack.count) entries") }
            var drafts: [DraftKey: String] = [:]
            for index in 0..<100 {
                let level = (index % 9 + 1) * 5
                drafts[DraftKey(account: alice, route: "r\(level)", parameters: ["id": "\(index)"])] =
                    "draft \(index)"
            }
            drafts[DraftKey(account: alice, route: "r45", parameters: ["id": "7"])] = "the open one"
            let bytes = try NavigationSnapshot(state).encoded()
            return Benchmark.Sides(
                baseline: {
                    let snapshot = try JSONDecoder().decode(NavigationSnapshot.self, from: bytes)
                    guard snapshot.state.stack.count == 50 else { throw BenchError("decoded wrong") }
                },
                candidate: {
                    let restored = navigator.restore(bytes, drafts: drafts, session: .valid(account: alice))
                    guard restored.result.state.stack.count == 50 else { throw BenchError("restored wrong") }
                },
                teardown: {}
            )
        }
    )
}
