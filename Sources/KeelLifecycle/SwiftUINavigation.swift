#if canImport(SwiftUI) && canImport(Observation)
    import Observation
    import SwiftUI

    /// Thin SwiftUI glue: holds the navigator's state for views and hands every effect to the app.
    ///
    /// ```swift
    /// @State var navigation = NavigationModel(navigator: navigator) { effects in
    ///     try? await drafts.apply(effects)                   // VaultDrafts
    ///     if effects.contains(.saveSnapshot) { save(NavigationSnapshot(navigation.state)) }
    /// }
    /// NavigationStack(path: navigation.path) { ... }         // SwiftUI's Back and swipe-back go to the navigator
    /// Button("Back") { navigation.send(.back(.appButton)) }  // the in-app button, the same decision
    /// ```
    ///
    /// All decisions stay in ``Navigator``; this type only stores the state and forwards events and effects.
    /// Effects are performed one event after another, in order (a draft saved by one event is never
    /// overtaken by the deletion of the next). This glue is not compiled on Linux, where Keel is tested: the
    /// decisions it forwards are (`NavigatorTests`).
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    @MainActor @Observable
    public final class NavigationModel {
        /// The current state.
        public private(set) var state: NavigationState
        /// The last refusal, if the last event was refused.
        public private(set) var lastError: String?
        private let navigator: Navigator
        private let perform: @MainActor ([NavigationEffect]) async -> Void
        /// The effects of the events so far, performed in order: each event's wait for the previous one's.
        private var performing: Task<Void, Never>?

        /// A model starting at `state` (a restored one, or the navigator's initial state).
        public init(
            navigator: Navigator, state: NavigationState? = nil,
            perform: @escaping @MainActor ([NavigationEffect]) async -> Void
        ) {
            self.navigator = navigator
            self.state = state ?? navigator.initialState
            self.perform = perform
        }

        /// Applies `event` and hands its effects to the app, after those of every earlier event.
        public func send(_ event: NavigationEvent) {
            let result = navigator.reduce(state, event)
            state = result.state
            lastError = result.error
            let effects = result.effects
            guard !effects.isEmpty else { return }
            let previous = performing
            let perform = perform
            performing = Task { @MainActor in
                await previous?.value
                await perform(effects)
            }
        }

        /// The ids of the entries above the root, for `NavigationStack(path:)`. SwiftUI's own Back button and
        /// swipe-back shorten the path; that is sent to the navigator as Back (`.gesture`), one screen at a
        /// time, never applied by SwiftUI alone: a screen holding input asks first, and then the path stays.
        /// A longer or different path (a `NavigationLink(value:)`) is not taken: open screens with
        /// `send(.open(route:parameters:))`, so that access and input are checked.
        public var path: Binding<[String]> {
            Binding(
                get: { MainActor.assumeIsolated { self.state.stack.dropFirst().map(\.id) } },
                set: { requested in MainActor.assumeIsolated { self.goBack(toDepth: requested.count) } })
        }

        /// Back until `depth` entries are above the root, a prompt waits, or Back leaves the stack as it is.
        private func goBack(toDepth depth: Int) {
            while state.prompt == nil, state.stack.count - 1 > depth {
                let before = state.stack.count
                send(.back(.gesture))
                if state.stack.count >= before { return }
            }
        }
    }
#endif
