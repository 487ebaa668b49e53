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
    /// NavigationStack(path: .constant(navigation.state.stack.dropFirst().map(\.id))) { ... }
    ///     .onBackGesture { navigation.send(.back(.gesture)) }
    /// ```
    ///
    /// All decisions stay in ``Navigator``; this type only stores the state and forwards effects.
    @MainActor @Observable
    public final class NavigationModel {
        /// The current state.
        public private(set) var state: NavigationState
        /// The last refusal, if the last event was refused.
        public private(set) var lastError: String?
        private let navigator: Navigator
        private let perform: @MainActor ([NavigationEffect]) async -> Void

        /// A model starting at `state` (a restored one, or the navigator's initial state).
        public init(
            navigator: Navigator, state: NavigationState? = nil,
            perform: @escaping @MainActor ([NavigationEffect]) async -> Void
        ) {
            self.navigator = navigator
            self.state = state ?? navigator.initialState
            self.perform = perform
        }

        /// Applies `event` and hands its effects to the app.
        public func send(_ event: NavigationEvent) {
            let result = navigator.reduce(state, event)
            state = result.state
            lastError = result.error
            let effects = result.effects
            guard !effects.isEmpty else { return }
            Task { await perform(effects) }
        }
    }
#endif
