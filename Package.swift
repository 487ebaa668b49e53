// swift-tools-version:6.0
//
// Keel: the layer between a mobile app's screens and its backend.
// Module map and dependency direction: docs/ARCHITECTURE.md.
// Present: KeelCore, KeelContract, KeelSchema, KeelContractTools, KeelHTTP, KeelStore, KeelSync (operation
// journal, outbox and sync engine), KeelLifecycle, KeelTesting, KeelReference (the reference backend and the
// reference app's model), the `keel` tool, `keel-notes` (the reference app on the command line) and
// `keel-bench`; not products: KeelCrypto (the crypto adapter), KeelStoreFixtures, KeelContractFixtures and
// `keel-fixtures`. The direction is fixed here: KeelCore at the bottom, KeelTesting beside the app-facing
// modules, C shims imported only by the module that wraps them (and by keel-bench, whose raw baselines must
// not go through Keel).
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Keel",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "KeelCore", targets: ["KeelCore"]),
        .library(name: "KeelContract", targets: ["KeelContract"]),
        .library(name: "KeelSchema", targets: ["KeelSchema"]),
        .library(name: "KeelContractTools", targets: ["KeelContractTools"]),
        .library(name: "KeelHTTP", targets: ["KeelHTTP"]),
        .library(name: "KeelStore", targets: ["KeelStore"]),
        .library(name: "KeelSync", targets: ["KeelSync"]),
        .library(name: "KeelLifecycle", targets: ["KeelLifecycle"]),
        .library(name: "KeelTesting", targets: ["KeelTesting"]),
        .library(name: "KeelReference", targets: ["KeelReference"]),
        .executable(name: "keel", targets: ["keel"]),
        .executable(name: "keel-bench", targets: ["keel-bench"]),
        .executable(name: "keel-notes", targets: ["keel-notes"]),
    ],
    targets: [
        // MARK: - C shims (system libraries; each imported only by the module that wraps it)
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite3"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        .systemLibrary(
            name: "CTLS",
            pkgConfig: "libssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        // Header only (libc): the calling thread's stack bounds (recursion that must end with an error) and CPU
        // affinity (keel-bench pins round trips between its own threads to one CPU).
        .systemLibrary(name: "CThreadStack"),
        .systemLibrary(
            name: "CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"]), .brew(["libyaml"])]
        ),

        // MARK: - Libraries
        .target(
            name: "KeelCore",
            dependencies: [.target(name: "CThreadStack", condition: .when(platforms: [.linux, .android]))],
            swiftSettings: swiftSettings),
        // The platform's crypto behind one small package-internal surface: SHA-256 (generated-file stamps,
        // journaled request bodies), AES-256-GCM and the secure random generator (KeelStore's sealing).
        // OpenSSL libcrypto on Linux, CryptoKit on Apple platforms. Not a product: apps never import it.
        .target(
            name: "KeelCrypto",
            dependencies: ["KeelCore", .target(name: "CCrypto", condition: .when(platforms: [.linux, .android]))],
            swiftSettings: swiftSettings
        ),
        .target(name: "KeelContract", dependencies: ["KeelCore"], swiftSettings: swiftSettings),
        // JSON Schema 2020-12 validation: used by the contract tools and by apps that opt in. Apart from
        // KeelContract so that an app that only links the HTTP client carries no validator.
        .target(name: "KeelSchema", dependencies: ["KeelContract", "KeelCore"], swiftSettings: swiftSettings),
        .target(
            name: "KeelContractTools",
            dependencies: ["KeelContract", "KeelSchema", "KeelCore", "KeelCrypto", "CYAML"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "KeelHTTP",
            // CTLS for SocketTransport's TLS on Linux; Apple platforms use URLSession's.
            dependencies: [
                "KeelContract", "KeelCore", "KeelCrypto",
                .target(name: "CTLS", condition: .when(platforms: [.linux, .android])),
            ],
            swiftSettings: swiftSettings
        ),
        .target(name: "KeelStore", dependencies: ["KeelCore", "KeelCrypto", "CSQLite"], swiftSettings: swiftSettings),
        // Where the client meets the store: the durable operation journal, the outbox and the sync engine.
        .target(
            name: "KeelSync", dependencies: ["KeelContract", "KeelCore", "KeelCrypto", "KeelHTTP", "KeelStore"],
            swiftSettings: swiftSettings),
        // Navigation contract, back decision, deep links, restoration, effect ledger: a pure state machine the
        // app's UI layer drives (MOB-PLAT-005, 008). Drafts and the effect ledger go to the account's vault (KeelStore).
        .target(
            name: "KeelLifecycle", dependencies: ["KeelCore", "KeelCrypto", "KeelStore"], swiftSettings: swiftSettings),
        // Test fixtures for storage: a notes schema history v1…v4 and its invariants (tests and keel-fixtures).
        .target(name: "KeelStoreFixtures", dependencies: ["KeelStore"], swiftSettings: swiftSettings),
        // Test fixtures for the contract tools: a payments-API-shaped description at any scale (tests, benchmarks).
        .target(name: "KeelContractFixtures", swiftSettings: swiftSettings),
        .target(name: "KeelTesting", dependencies: ["KeelCore"], swiftSettings: swiftSettings),
        // The reference backend (the sample contract, served by KeelTesting's HTTP/1.1 server, persisted in
        // SQLite) and, built only on public API, the reference app model.
        .target(
            name: "KeelReference",
            dependencies: [
                "KeelCore", "KeelContract", "KeelCrypto", "KeelHTTP", "KeelLifecycle", "KeelStore", "KeelSync",
                "KeelTesting",
            ],
            swiftSettings: swiftSettings),

        // MARK: - Executables
        .executableTarget(
            name: "keel",
            dependencies: [
                "KeelCore", "KeelContract", "KeelSchema", "KeelContractTools", "KeelHTTP", "KeelStore", "KeelLifecycle",
                "KeelReference", "KeelTesting",
            ],
            swiftSettings: swiftSettings
        ),
        // Runs storage, journal and lifecycle workloads in a child process for kill -9 tests (KeelStoreTests,
        // KeelSyncTests, KeelLifecycleTests); not a product.
        .executableTarget(
            name: "keel-fixtures",
            dependencies: [
                "KeelContract", "KeelCore", "KeelHTTP", "KeelLifecycle", "KeelReference", "KeelStore",
                "KeelStoreFixtures", "KeelSync",
            ],
            swiftSettings: swiftSettings),
        // The reference notes app on the command line (issue #15): NotesApp, one JSON answer per command.
        .executableTarget(
            name: "keel-notes", dependencies: ["KeelContract", "KeelCore", "KeelReference"],
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "keel-bench",
            // CSQLite and CYAML directly: baselines are raw sqlite3 calls and libyaml parsing alone.
            dependencies: [
                "KeelCore", "KeelContract", "KeelContractFixtures", "KeelSchema", "KeelContractTools", "KeelHTTP",
                "KeelLifecycle", "KeelReference", "KeelStore", "KeelStoreFixtures", "KeelSync", "KeelTesting",
                "CSQLite", "CYAML",
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: - Tests
        .testTarget(
            name: "CShimTests",
            dependencies: [
                "CSQLite",
                "CYAML",
                .target(name: "CCrypto", condition: .when(platforms: [.linux, .android])),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KeelContractTests", dependencies: ["KeelContract", "KeelSchema", "KeelTesting"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "KeelSchemaTests", dependencies: ["KeelSchema", "KeelContract", "KeelTesting"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "KeelContractToolsTests",
            dependencies: [
                "KeelContractTools", "KeelContract", "KeelContractFixtures", "KeelCore", "KeelCrypto", "KeelTesting",
            ],
            // Contracts the generator tests read from disk (they reference each other by file name).
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KeelHTTPTests", dependencies: ["KeelHTTP", "KeelContract", "KeelTesting"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "KeelLifecycleTests",
            dependencies: ["KeelLifecycle", "KeelCore", "KeelStore", "KeelStoreFixtures", "KeelTesting"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "KeelSyncTests",
            dependencies: [
                "KeelSync", "KeelHTTP", "KeelStore", "KeelCore", "KeelContract", "KeelReference", "KeelTesting",
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "KeelReferenceTests",
            dependencies: [
                "KeelReference", "KeelContract", "KeelContractTools", "KeelCore", "KeelHTTP", "KeelStore", "KeelSync",
                "KeelTesting",
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "KeelStoreTests",
            dependencies: ["KeelStore", "KeelStoreFixtures", "KeelCore", "KeelCrypto", "KeelTesting"],
            swiftSettings: swiftSettings),
        .testTarget(name: "KeelCryptoTests", dependencies: ["KeelCrypto"], swiftSettings: swiftSettings),
        .testTarget(name: "KeelCoreTests", dependencies: ["KeelCore", "KeelTesting"], swiftSettings: swiftSettings),
        .testTarget(name: "KeelTestingTests", dependencies: ["KeelTesting", "KeelCore"], swiftSettings: swiftSettings),
        // Runs the built `keel` binary as a child process (swift build --build-tests builds it too).
        .testTarget(
            name: "KeelCommandTests",
            dependencies: ["KeelTesting", "KeelContract", "KeelContractFixtures", "KeelStore"],
            swiftSettings: swiftSettings),
    ]
)

// MARK: - Fuzzing (scripts/fuzz)

// libFuzzer targets, present only when scripts/fuzz builds them (KEEL_FUZZ=1, with --sanitize=fuzzer):
// libFuzzer supplies `main`, so they cannot link in an ordinary build.
if Context.environment["KEEL_FUZZ"] == "1" {
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        ("json", ["KeelContract"]),
        ("yaml-openapi", ["KeelContractTools"]),
        ("schema", ["KeelSchema", "KeelContract"]),
        ("http-date", ["KeelHTTP"]),
        ("http-response", ["KeelHTTP"]),
        ("request-head", ["KeelTesting"]),
    ]
    for target in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: "fuzz-\(target.name)", dependencies: target.dependencies, path: "Fuzz/Targets/\(target.name)",
                swiftSettings: swiftSettings + [.unsafeFlags(["-parse-as-library"])]
            ))
        package.products.append(.executable(name: "fuzz-\(target.name)", targets: ["fuzz-\(target.name)"]))
    }
}
