import Foundation
import KeelContractFixtures
import KeelTesting
import Testing

/// `keel contract generate` (issue #4): the generated models compile with swiftc and decode real payloads
/// as the contract says; `--check` catches stale output; unsupported schemas write nothing.
@Suite(.timeLimit(.minutes(3))) struct ContractGenerateCommandTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory(prefix: "keel-contract-generate") }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let notes = repository.appendingPathComponent("contracts/notes-api.v1.yaml").path
    static let shapes = repository.appendingPathComponent("Tests/KeelContractToolsTests/Fixtures/generator/shapes.yaml")
        .path
    static let payments = repository.appendingPathComponent(
        "Tests/KeelContractToolsTests/Fixtures/generator/payments.yaml"
    ).path
    static let edge = repository.appendingPathComponent("Tests/KeelContractToolsTests/Fixtures/generator/edge.yaml")
        .path

    private func run(_ arguments: [String]) async throws -> (ChildProcess.Termination, String, String) {
        try await runKeel(["contract", "generate"] + arguments, in: directory.url)
    }

    // MARK: - Generated code compiles and decodes

    @Test func theSampleContractsModelsCompileAndDecodeAResponseAsTheContractSays() async throws {
        let (status, output, errors) = try await run([Self.notes, "--output", "Generated"])
        #expect(status == .exited(0), "\(errors)")
        #expect(output == "wrote \(directory.url("Generated/NotesApiV1Models.swift").path)\n")
        let program = """
            import Foundation
            import KeelContract

            let decoder = ContractDecoder()
            let example = try Data(contentsOf: URL(fileURLWithPath: CommandLine.arguments[1]))
            let note = try decoder.decode(Note.self, from: example)
            print("note", note.title, note.kind, note.visibility, note.version)

            let feed = \"\"\"
                {"changes": [
                  {"id": "1", "title": "a", "body": "", "kind": "drawing", "visibility": "shared", "version": 2, "updatedAt": "2026-11-30T08:00:00.250Z"},
                  {"id": "2", "title": "b", "body": "", "kind": "checklist", "visibility": "private", "version": 1, "updatedAt": "2026-11-30T08:00:00Z", "pinned": true}
                ], "cursor": "c2"}
                \"\"\"
            let page = try decoder.decode(GetChangesResponse.self, from: Data(feed.utf8))
            print("feed", page.changes.map(\\.kind), page.cursor, page.hasMore as Any)
            // An unknown kind survives a round trip unchanged.
            let encoded = String(decoding: try ContractEncoder(outputFormatting: .sortedKeys).encode(page.changes[0]), as: UTF8.self)
            print("encoded", encoded)

            func failure(_ text: String) -> String {
                do {
                    _ = try decoder.decode(GetChangesResponse.self, from: Data(text.utf8))
                    return "decoded"
                } catch {
                    return "\\(error.code) at \\(error.path)"
                }
            }
            print("closed", failure(feed.replacingOccurrences(of: "\\"private\\"", with: "\\"public\\"")))
            print("missing", failure(feed.replacingOccurrences(of: "\\"title\\": \\"b\\", ", with: "")))

            let config = try decoder.decode(ClientConfig.self, from: Data(#"{"status": "updateRequired", "minimumVersion": "2.0"}"#.utf8))
            print("config", config.status, config.minimumVersion ?? "-", config.retryAfterSeconds as Any)
            let error = try decoder.decode(ErrorModel.self, from: Data(#"{"code": "validation", "errors": [{"field": "title", "code": "too_long"}]}"#.utf8))
            print("error", error.code, error.errors?.first?.field ?? "-")
            """
        let run = try await compileAndRun(
            program: program, generated: directory.url("Generated/NotesApiV1Models.swift"),
            arguments: [Self.repository.appendingPathComponent("contracts/examples/note.json").path])
        #expect(
            run == """
                note Groceries checklist private 3
                feed [unknown(drawing), checklist] c2 nil
                encoded {"body":"","id":"1","kind":"drawing","title":"a","updatedAt":"2026-11-30T08:00:00.250Z","version":2,"visibility":"shared"}
                closed undeclaredEnumValue at changes[1].visibility
                missing missingMember at changes[1].title
                config updateRequired 2.0 nil
                error validation title

                """)
    }

    /// The newest revision of the sample contract (found by listing `contracts/`) compiles and decodes its
    /// version answers: 1.7's `UpdateRequired` refines members of `Error` through `allOf` (the code pinned to
    /// `update_required`, `minimumVersions` required and validated) and did not generate (an outside audit).
    @Test func theNewestSampleContractsModelsCompileAndDecodeTheVersionAnswers() async throws {
        let newest = try #require(
            try FileManager.default.contentsOfDirectory(
                atPath: Self.repository.appendingPathComponent("contracts").path
            )
            .compactMap { name -> (version: [Int], name: String)? in
                guard name.hasPrefix("notes-api.v"), name.hasSuffix(".yaml") else { return nil }
                let digits = name.dropFirst("notes-api.v".count).dropLast(".yaml".count).split(separator: ".")
                let version = digits.compactMap { Int($0) }
                guard version.count == digits.count else { return nil }
                return (version + Array(repeating: 0, count: max(0, 3 - version.count)), name)
            }.max { $0.version.lexicographicallyPrecedes($1.version) })
        #expect(newest.version.lexicographicallyPrecedes([1, 7, 0]) == false, "\(newest.name)")
        let (status, output, errors) = try await run([
            Self.repository.appendingPathComponent("contracts/\(newest.name)").path, "--output", "Generated",
        ])
        #expect(status == .exited(0), "\(errors)")
        let generated = try #require(output.split(separator: " ").last.map { String($0.dropLast()) })
        let program = """
            import Foundation
            import KeelContract

            let decoder = ContractDecoder()
            let body = #"{"code": "update_required", "message": "m", "minimumVersions": {"ios": "2.1"}}"#
            let update = try decoder.decode(UpdateRequired.self, from: Data(body.utf8))
            // The minimums validated only more strictly than Error's: the same Swift type.
            let minimums: ErrorModel.MinimumVersions = update.minimumVersions
            print("update", update.code, minimums.ios ?? "-", minimums.android ?? "-")
            let error = try decoder.decode(ErrorModel.self, from: Data(body.utf8))
            print("error", error.code, error.minimumVersions == update.minimumVersions)
            let maintenance = try decoder.decode(Maintenance.self, from: Data(#"{"code": "maintenance"}"#.utf8))
            print("maintenance", maintenance.code)

            func failure(_ text: String) -> String {
                do {
                    _ = try decoder.decode(UpdateRequired.self, from: Data(text.utf8))
                    return "decoded"
                } catch {
                    return "\\(error.code) at \\(error.path)"
                }
            }
            print("other code", failure(body.replacingOccurrences(of: "update_required", with: "validation")))
            print("no minimums", failure(#"{"code": "update_required"}"#))
            """
        let run = try await compileAndRun(program: program, generated: URL(fileURLWithPath: generated))
        #expect(
            run == """
                update updateRequired 2.1 -
                error update_required true
                maintenance maintenance
                other code undeclaredEnumValue at code
                no minimums missingMember at minimumVersions

                """)
    }

    @Test func discriminatedUnionsAllOfAndNullableMembersWorkInCompiledCode() async throws {
        let (status, _, errors) = try await run([Self.shapes, "--output", "."])
        #expect(status == .exited(0), "\(errors)")
        let program = """
            import Foundation
            import KeelContract

            let decoder = ContractDecoder()
            let json = \"\"\"
                {"id": "d1", "title": "T", "created_at": "2026-01-02T03:04:05Z", "owner": null, "layer": {"name": "L", "parent": {"id": "p"}},
                 "shapes": [{"kind": "circle", "finish": "matte", "radius": 2.5},
                            {"kind": "triangle", "finish": "chrome", "points": [[1, 2], [3, 4]], "children": [{"kind": "circle", "finish": "gloss", "radius": 1}]}],
                 "style": "wavy", "ETag": "e1", "default": true, "metadata": {"big": 9007199254740993}, "license": {"name": "CC"}}
                \"\"\"
            let drawing = try decoder.decode(Drawing.self, from: Data(json.utf8))
            for shape in drawing.shapes {
                switch shape {
                case .circle(let circle): print("circle", circle.radius, circle.finish)
                case .polygon(let polygon): print("polygon", polygon.kind, polygon.points, polygon.finish, polygon.children?.count ?? 0)
                }
            }
            print("drawing", drawing.owner as Any, drawing.layer.parent?.id ?? "-", drawing.style.map(String.init(describing:)) ?? "-",
                  drawing.eTag ?? "-", drawing.default ?? false, drawing.metadata?["big"] ?? 0, drawing.license?.name ?? "-")

            let encoded = String(decoding: try ContractEncoder(outputFormatting: .sortedKeys).encode(drawing), as: UTF8.self)
            print("owner", encoded.contains(#""owner":null"#), "created", encoded.contains(#""created_at":"2026-01-02T03:04:05Z""#))
            print("round trip", try decoder.decode(Drawing.self, from: Data(encoded.utf8)) == drawing)

            func failure(_ text: String) -> String {
                do {
                    _ = try decoder.decode(Drawing.self, from: Data(text.utf8))
                    return "decoded"
                } catch {
                    return "\\(error.code) at \\(error.path)"
                }
            }
            print("unknown variant", failure(json.replacingOccurrences(of: #""kind": "circle", "finish": "matte""#, with: #""kind": "star", "finish": "matte""#)))
            print("owner missing", failure(json.replacingOccurrences(of: #""owner": null, "#, with: "")))
            print("parent null", failure(json.replacingOccurrences(of: #""parent": {"id": "p"}"#, with: #""parent": null"#)))
            print("error", try decoder.decode(ErrorModel.self, from: Data(#"{"code": "2fa_required"}"#.utf8)).code)
            let list = try decoder.decode(ListDrawingsResponse.self, from: Data("[\\(json)]".utf8))
            print("list", list.count)
            """
        let run = try await compileAndRun(program: program, generated: directory.url("ShapesModels.swift"))
        #expect(
            run == """
                circle 2.5 matte
                polygon triangle [[1, 2], [3, 4]] unknown(chrome) 1
                drawing nil p unknown(wavy) e1 true 9007199254740993 CC
                owner true created true
                round trip true
                unknown variant undeclaredEnumValue at shapes[0].kind
                owner missing missingMember at owner
                parent null decoded
                error _2faRequired
                list 1

                """)
    }

    @Test func unionsToldApartByJSONKindDecodeWithoutTrialInCompiledCode() async throws {
        let (status, _, errors) = try await run([Self.payments, "--output", "."])
        #expect(status == .exited(0), "\(errors)")
        let program = """
            import Foundation
            import KeelContract

            let decoder = ContractDecoder()
            let json = \"\"\"
                {"id": "ch_1", "amount": 500, "customer": "cus_9", "on_behalf_of": null,
                 "related": ["cus_1", {"id": "cus_2", "object": "customer", "email": null}],
                 "source": {"routing_number": "110000000", "bank_name": "Test"}, "metadata_value": 7}
                \"\"\"
            let charge = try decoder.decode(Charge.self, from: Data(json.utf8))
            func show(_ value: Charge.CustomerValue) -> String {
                switch value {
                case .id(let id): return "id \\(id)"
                case .expanded(let customer): return "customer \\(customer.id)"
                }
            }
            func show(_ value: Charge.RelatedItem) -> String {
                switch value {
                case .id(let id): return "id \\(id)"
                case .expanded(let customer): return "customer \\(customer.id)"
                }
            }
            func show(_ value: Nullable<Charge.OnBehalfOf>?) -> String {
                switch value {
                case nil: return "absent"
                case .null?: return "null"
                case .value(.id(let id))?: return "id \\(id)"
                case .value(.expanded(let customer))?: return "customer \\(customer.id)"
                }
            }
            print(show(charge.customer), show(charge.onBehalfOf))
            print(charge.related?.map { show($0) } ?? [])
            switch charge.source {
            case .card(let card): print("card", card.last4)
            case .bankAccount(let account): print("bank", account.routingNumber)
            }
            print(charge.metadataValue.map { "\\($0)" } ?? "-")
            let expanded = json.replacingOccurrences(of: #""customer": "cus_9""#, with: #""customer": {"id": "cus_9", "object": "customer"}"#)
                .replacingOccurrences(of: #""on_behalf_of": null"#, with: #""on_behalf_of": "acct_1""#)
                .replacingOccurrences(of: #"{"routing_number": "110000000", "bank_name": "Test"}"#, with: #"{"last4": "4242", "brand": "visa"}"#)
                .replacingOccurrences(of: #""metadata_value": 7"#, with: #""metadata_value": ["a", "b"]"#)
            let other = try decoder.decode(Charge.self, from: Data(expanded.utf8))
            print(show(other.customer), show(other.onBehalfOf), other.metadataValue.map { "\\($0)" } ?? "-")
            if case .card(let card) = other.source { print("card", card.last4, card.brand) }
            let encoded = try ContractEncoder(outputFormatting: .sortedKeys).encode(other)
            print("round trip", try decoder.decode(Charge.self, from: encoded) == other)
            print(String(decoding: try ContractEncoder(outputFormatting: .sortedKeys).encode(other.customer), as: UTF8.self))

            func failure(_ text: String) -> String {
                do {
                    _ = try decoder.decode(Charge.self, from: Data(text.utf8))
                    return "decoded"
                } catch {
                    return "\\(error.code) at \\(error.path)"
                }
            }
            print("number for customer", failure(json.replacingOccurrences(of: #""customer": "cus_9""#, with: #""customer": 9"#)))
            print("null for customer", failure(json.replacingOccurrences(of: #""customer": "cus_9""#, with: #""customer": null"#)))
            print("source without members", failure(json.replacingOccurrences(of: #"{"routing_number": "110000000", "bank_name": "Test"}"#, with: #"{"bank_name": "Test"}"#)))
            print("expanded without id", failure(json.replacingOccurrences(of: #""customer": "cus_9""#, with: #""customer": {"object": "customer"}"#)))
            """
        let output = try await compileAndRun(program: program, generated: directory.url("PaymentsModels.swift"))
        #expect(
            output == """
                id cus_9 null
                ["id cus_1", "customer cus_2"]
                bank 110000000
                integer(7)
                customer cus_9 id acct_1 array(["a", "b"])
                card 4242 visa
                round trip true
                {"id":"cus_9","object":"customer"}
                number for customer typeMismatch at customer
                null for customer typeMismatch at customer
                source without members invalidValue at source
                expanded without id missingMember at customer.id

                """, "\(output)")
    }

    @Test func integerEnumsAndBooleanMarkersAreClosedInCompiledCode() async throws {
        let (status, _, errors) = try await run([Self.payments, "--output", "."])
        #expect(status == .exited(0), "\(errors)")
        let program = """
            import Foundation
            import KeelContract

            let decoder = ContractDecoder()
            func customer(_ value: Invoice.CustomerValue) -> String {
                switch value {
                case .string(let id): return "id \\(id)"
                case .customerWithDates(let customer): return "customer \\(customer.id) created \\(customer.created)"
                case .deletedCustomer(let deleted): return "deleted \\(deleted.id) \\(deleted.deleted)"
                }
            }
            func show(_ json: String) -> String {
                do {
                    let invoice = try decoder.decode(Invoice.self, from: Data(json.utf8))
                    let level: String
                    switch invoice.level {
                    case nil: level = "absent"
                    case .null?: level = "null"
                    case .value(let value)?: level = "\\(value)"
                    }
                    return "\\(customer(invoice.customer)) \\(invoice.priority) \\(invoice.priority.rawValue) \\(level) \\(invoice.paid.map(String.init) ?? "-")"
                } catch {
                    return "\\(error.code) at \\(error.path)"
                }
            }
            print(show(#"{"id": "in_1", "customer": "cus_1", "priority": 2, "level": -1, "paid": false}"#))
            print(show(#"{"id": "in_2", "customer": {"id": "cus_2", "object": "customer", "created": 1700000000}, "priority": 3, "level": null}"#))
            print(show(#"{"id": "in_3", "customer": {"id": "cus_3", "object": "customer", "deleted": true}, "priority": 1}"#))
            print(show(#"{"id": "in_4", "customer": "cus_4", "priority": 4}"#))
            print(show(#"{"id": "in_5", "customer": {"id": "cus_5", "object": "customer", "deleted": false}, "priority": 1}"#))
            print(show(#"{"id": "in_6", "customer": {"id": "cus_6", "object": "customer"}, "priority": 1}"#))
            print(Invoice.Priority.allCases.map(\\.rawValue), Invoice.Level.valueMinus1.rawValue)
            let invoice = try decoder.decode(Invoice.self, from: Data(#"{"id": "in_3", "customer": {"id": "cus_3", "object": "customer", "deleted": true}, "priority": 1, "level": 0}"#.utf8))
            let encoded = try ContractEncoder(outputFormatting: .sortedKeys).encode(invoice)
            print(String(decoding: encoded, as: UTF8.self))
            print("round trip", try decoder.decode(Invoice.self, from: encoded) == invoice)
            """
        let output = try await compileAndRun(program: program, generated: directory.url("PaymentsModels.swift"))
        #expect(
            output == """
                id cus_1 value2 2 valueMinus1 false
                customer cus_2 created 1700000000 value3 3 null -
                deleted cus_3 true value1 1 absent -
                undeclaredEnumValue at priority
                undeclaredEnumValue at customer.deleted
                invalidValue at customer
                [1, 2, 3] -1
                {"customer":{"deleted":true,"id":"cus_3","object":"customer"},"id":"in_3","level":0,"priority":1}
                round trip true

                """, "\(output)")
    }

    @Test func aPaymentsDescriptionAtScaleTypeChecks() async throws {
        // 330 component schemas with expandable fields everywhere, markers and integer enums (#16): about
        // 43,000 lines of Swift in nine files, type-checked by swiftc (about 25 s here; building it is the next
        // test's job at a smaller scale, since the same generator code makes every resource).
        try Data(PaymentsAPI.yaml(resources: 110).utf8).write(to: directory.url("payments-large.yaml"))
        let (status, _, errors) = try await run(["payments-large.yaml", "--output", "."])
        #expect(status == .exited(0), "\(errors)")
        let files = try Self.withParts(directory.url("PaymentsLargeModels.swift"))
        #expect(files.count > 5)
        let checker = try ChildProcess.launch(
            executable: try Self.swiftc(),
            arguments: [
                "-typecheck", "-swift-version", "6", "-warnings-as-errors", "-I",
                ChildProcess.productsDirectory.appendingPathComponent("Modules").path,
            ] + Self.systemModules + files.map(\.path))
        checker.closeInput()
        #expect(
            try await checker.waitForExit(timeout: .seconds(170)) == .exited(0),
            "\(checker.output(of: .standardError).prefix(2000))")
    }

    @Test func aPaymentsDescriptionBuildsAndRoundTrips() async throws {
        // The same description at 42 schemas (every pattern of the large one), compiled and run: two files,
        // so declarations in one part use those in the other.
        try Data(PaymentsAPI.yaml(resources: 14).utf8).write(to: directory.url("payments-large.yaml"))
        let (status, _, errors) = try await run(["payments-large.yaml", "--output", "."])
        #expect(status == .exited(0), "\(errors)")
        #expect(try Self.withParts(directory.url("PaymentsLargeModels.swift")).count == 2)
        let program = """
            import Foundation
            import KeelContract

            let json = \"\"\"
                {"id": "r0", "object": "resource_0", "created": 1, "livemode": false, "status": "active", "priority": 2,
                 "parent": {"id": "r1", "object": "resource_1", "created": 2, "livemode": true, "status": "pending",
                            "priority": 1, "parent": "r2"},
                 "owner": {"id": "r7", "object": "resource_7", "deleted": true},
                 "related": ["r13", {"id": "r13b", "object": "resource_13", "created": 3, "livemode": false,
                                     "status": "canceled", "priority": 3, "parent": "r14"}],
                 "details": {"source": "r3", "attempts": 2}, "metadata": {"order": "6735"}}
                \"\"\"
            let decoder = ContractDecoder()
            let resource = try decoder.decode(Resource0.self, from: Data(json.utf8))
            if case .expanded(let parent) = resource.parent, case .id(let grandparent) = parent.parent {
                print("parent", parent.id, parent.status, "grandparent", grandparent)
            }
            if case .value(.deletedResource7(let owner))? = resource.owner { print("owner deleted", owner.id, owner.deleted) }
            for item in resource.related ?? [] {
                switch item {
                case .id(let id): print("related id", id)
                case .expanded(let related): print("related", related.id, related.priority.rawValue)
                }
            }
            if case .value(let details)? = resource.details { print("details", details.attempts?.rawValue ?? -1) }
            let encoded = try ContractEncoder(outputFormatting: .sortedKeys).encode(resource)
            print("round trip", try decoder.decode(Resource0.self, from: encoded) == resource)
            """
        let output = try await compileAndRun(program: program, generated: directory.url("PaymentsLargeModels.swift"))
        #expect(
            output == """
                parent r1 pending grandparent r2
                owner deleted r7 true
                related id r13
                related r13b 3
                details 2
                round trip true

                """, "\(output)")
    }

    @Test func edgeCasesFromReviewCompileAndDecodeAsTheContractSays() async throws {
        let (status, _, errors) = try await run([Self.edge, "--output", "."])
        #expect(status == .exited(0), "\(errors)")
        let program = #"""
            import Foundation
            import KeelContract

            let decoder = ContractDecoder()
            func check<T: Decodable>(_ type: T.Type, _ text: String) -> String {
                do {
                    _ = try decoder.decode(type, from: Data(text.utf8))
                    return "decoded"
                } catch {
                    return "\(error.code) at \(error.path)"
                }
            }
            // Members named like the coding code's locals; names that start with a digit or are not ASCII.
            let names = try decoder.decode(Names.self, from: Data(#"{"container": "c", "encoder": 1, "decoder": true, "2fa": "totp", "first": "gold", "café": "x"}"#.utf8))
            print("names", names.container, names._2fa, names.first ?? .silver, names.cafe ?? "-", String(decoding: try ContractEncoder().encode(names), as: UTF8.self))
            // An object without members is still an object.
            print("empty", check(Empty.self, "{}"), check(Empty.self, "5"), check(Empty.self, "null"), String(decoding: try ContractEncoder().encode(Empty()), as: UTF8.self))
            // `required` beside a $ref (3.1) or a one-part allOf; readOnly/writeOnly members may be missing.
            print("tightened", check(Tightened.self, #"{"id": "1"}"#), check(TightenedAllOf.self, #"{"id": "1"}"#), check(Base.self, #"{"title": "t"}"#))
            // A schema in its own file that refers to itself.
            let holder = try decoder.decode(Holder.self, from: Data(#"{"empty": {}, "tree": {"name": "root", "children": [{"name": "leaf"}]}, "trees": []}"#.utf8))
            print("tree", holder.tree.name, holder.tree.children?.first?.name ?? "-", holder.trees?.count ?? -1)
            // An explicit mapping wins over a variant's name.
            if case .cat = try decoder.decode(Pet.self, from: Data(#"{"kind": "Dog"}"#.utf8)) { print("Dog selects cat") }
            print("puppy", check(Pet.self, #"{"kind": "puppy"}"#), "Cat", check(Pet.self, #"{"kind": "Cat"}"#))
            // Nullable and not required: absent, null and a value are three states, kept both ways.
            for text in [#"{}"#, #"{"dueDate": null}"#, #"{"dueDate": "2026-11-30T08:00:00Z"}"#, #"{"any": null}"#] {
                let patch = try decoder.decode(Patch.self, from: Data(text.utf8))
                print("patch", patch.dueDate.map { "\($0)" } ?? "absent", String(decoding: try ContractEncoder().encode(patch), as: UTF8.self))
            }
            print("clear", String(decoding: try ContractEncoder().encode(Patch(title: "t", dueDate: .null)), as: UTF8.self))
            // Open at this use although ModelIDs itself is closed.
            print("model", try decoder.decode(Chat.self, from: Data(#"{"model": "o3"}"#.utf8)).model, check(ModelIDs.self, #""o3""#))
            // Members named like the library's JSONKind and ClosedIntegerEnum, beside a union and an integer enum.
            let weird = try decoder.decode(Weird.self, from: Data(#"{"JSONKind": {"a": "x"}, "ClosedIntegerEnum": {"b": "y"}, "either": 3, "level": 2}"#.utf8))
            print("weird", weird.jsonKind?.a ?? "-", weird.closedIntegerEnum?.b ?? "-", check(Weird.self, #"{"level": 3}"#))
            // Money as Decimal (0.1 + 0.2 is 0.3, and 17 digits stay 17), a UInt64 beyond Int64, a UInt8 bound.
            let amounts = try decoder.decode(Amounts.self, from: Data(#"{"price": 12345678901234.56789, "total": 18446744073709551615, "ceiling": 255}"#.utf8))
            let sum = try decoder.decode(Amounts.self, from: Data(#"{"price": 0.1, "total": 0, "ceiling": 0}"#.utf8)).price + Decimal(string: "0.2")!
            print("amounts", amounts.price, amounts.total, amounts.ceiling, sum == Decimal(string: "0.3")!, check(Amounts.self, #"{"price": 1, "total": -1, "ceiling": 0}"#), check(Amounts.self, #"{"price": 1, "total": 0, "ceiling": 256}"#), String(decoding: try ContractEncoder().encode(amounts), as: UTF8.self))
            // Union variants of date-time and decimal are read and written as the contract says, not as
            // Date(from:) and Decimal(from:) would (seconds, an object).
            for text in [#"{"at": "2026-11-30T08:00:00Z", "amount": 12.5}"#, #"{"at": 7, "amount": "unknown"}"#, #"{"deleted": null}"#, #"{"deleted": true}"#] {
                print("when", String(decoding: try ContractEncoder().encode(try decoder.decode(When.self, from: Data(text.utf8))), as: UTF8.self))
            }
            // An optional nullable marker still holds its one value; a discriminator and enum values match by bytes.
            print("marker", check(When.self, #"{"deleted": false}"#))
            let states = try [#"{"state": "café"}"#, #"{"state": "cafe\u0301"}"#].map { try decoder.decode(When.self, from: Data($0.utf8)).state! }
            print("states", states.map(\.rawValue.utf8.count), states[0] == states[1], When.State.allCases.count, When.State.allCases_.rawValue)
            print("pets", check(Pet.self, #"{"kind": "café"}"#), check(Pet.self, #"{"kind": "cafe\u0301"}"#))
            """#
        let output = try await compileAndRun(program: program, generated: directory.url("EdgeModels.swift"))
        #expect(
            output == """
                names c totp gold x {"2fa":"totp","café":"x","container":"c","decoder":true,"encoder":1,"first":"gold"}
                empty decoded typeMismatch at  unexpectedNull at  {}
                tightened missingMember at title missingMember at title decoded
                tree root leaf 0
                Dog selects cat
                puppy decoded Cat undeclaredEnumValue at kind
                patch absent {}
                patch null {"dueDate":null}
                patch value(2026-11-30 08:00:00 +0000) {"dueDate":"2026-11-30T08:00:00Z"}
                patch absent {"any":null}
                clear {"dueDate":null,"title":"t"}
                model unknown(o3) undeclaredEnumValue at 
                weird x y undeclaredEnumValue at level
                amounts 12345678901234.56789 18446744073709551615 255 true invalidValue at total invalidValue at ceiling {"ceiling":255,"price":12345678901234.56789,"total":18446744073709551615}
                when {"amount":12.5,"at":"2026-11-30T08:00:00Z"}
                when {"amount":"unknown","at":7}
                when {"deleted":null}
                when {"deleted":true}
                marker undeclaredEnumValue at deleted
                states [5, 6] false 4 allCases
                pets decoded undeclaredEnumValue at kind

                """)
        // Descriptions with other line breaks stay comments: nothing from them was compiled (the program
        // above would not notice), so check the text too.
        let generated = try String(contentsOf: directory.url("EdgeModels.swift"), encoding: .utf8)
        for line in generated.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        where line.contains("Injected") {
            #expect(line.trimmingCharacters(in: .whitespaces).hasPrefix("//"), "\(line)")
        }
    }

    // MARK: - --check and failures

    @Test func checkPassesWhenCurrentAndFailsWhenStaleOrMissingWithoutWriting() async throws {
        let spec = directory.url("notes.yaml")
        try Data(contentsOf: URL(fileURLWithPath: Self.notes)).write(to: spec)
        let (missing, _, missingErrors) = try await run(["notes.yaml", "--output", "out", "--check"])
        #expect(missing == .exited(1))
        #expect(missingErrors.contains("out/NotesModels.swift is missing"), "\(missingErrors)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("out").path))

        #expect(try await run(["notes.yaml", "--output", "out"]).0 == .exited(0))
        let (current, currentOutput, _) = try await run(["notes.yaml", "--output", "out", "--check"])
        #expect(current == .exited(0))
        #expect(currentOutput.hasSuffix("out/NotesModels.swift is up to date\n"))

        // A change to the contract (even one that keeps the models the same) makes the output stale: the header hashes the input.
        let generated = try Data(contentsOf: directory.url("out/NotesModels.swift"))
        try Data((try String(contentsOf: spec, encoding: .utf8) + "\n# a comment\n").utf8).write(to: spec)
        let (stale, _, staleErrors) = try await run(["notes.yaml", "--output", "out", "--check"])
        #expect(stale == .exited(1))
        #expect(staleErrors.contains("out/NotesModels.swift is stale"), "\(staleErrors)")
        #expect(try Data(contentsOf: directory.url("out/NotesModels.swift")) == generated)

        // A hand edit of the generated file is stale too.
        #expect(try await run(["notes.yaml", "--output", "out"]).0 == .exited(0))
        let edited = try String(contentsOf: directory.url("out/NotesModels.swift"), encoding: .utf8)
            .replacingOccurrences(of: "var title: String", with: "var title: String?")
        try Data(edited.utf8).write(to: directory.url("out/NotesModels.swift"))
        #expect(try await run(["notes.yaml", "--output", "out", "--check"]).0 == .exited(1))
    }

    @Test func largeOutputIsSplitIntoPartsThatCheckCoversAndPartsNoLongerGeneratedAreRemoved() async throws {
        let spec = directory.url("pay.yaml")
        try Data(PaymentsAPI.yaml(resources: 30).utf8).write(to: spec)
        let (status, output, errors) = try await run(["pay.yaml", "--output", "out"])
        #expect(status == .exited(0), "\(errors)")
        let files = try Self.withParts(directory.url("out/PayModels.swift"))
        #expect(files.count >= 3)
        #expect(output == files.map { "wrote \($0.path)\n" }.joined())
        for (index, file) in files.enumerated() {
            let text = try String(contentsOf: file, encoding: .utf8)
            #expect(text.hasPrefix("// Generated by `keel contract generate`"))
            #expect(text.contains("\n// Part \(index + 1) of \(files.count)\n"))
            #expect(text.contains("\npublic import KeelContract\n"))
            // Whole declarations of about 5,000 lines (the last one may run over).
            #expect(text.split(separator: "\n", omittingEmptySubsequences: false).count < 6_000)
        }
        #expect(try await run(["pay.yaml", "--output", "out", "--check"]).0 == .exited(0))

        // A hand edit in one part and a missing part: both reported, nothing written.
        let part2 = directory.url("out/PayModels+Part2.swift")
        try Data((try String(contentsOf: part2, encoding: .utf8) + "// edited\n").utf8).write(to: part2)
        try FileManager.default.removeItem(at: files[2])
        let (stale, _, staleErrors) = try await run(["pay.yaml", "--output", "out", "--check"])
        #expect(stale == .exited(1))
        #expect(staleErrors.contains("out/PayModels+Part2.swift is stale"), "\(staleErrors)")
        #expect(staleErrors.contains("out/PayModels+Part3.swift is missing"), "\(staleErrors)")
        #expect(!FileManager.default.fileExists(atPath: files[2].path))

        // The contract shrinks to one file: the old parts are reported, then removed; a file of the user's
        // that merely has a part's name is neither.
        #expect(try await run(["pay.yaml", "--output", "out"]).0 == .exited(0))
        try Data(PaymentsAPI.yaml(resources: 3).utf8).write(to: spec)
        let (shrunk, _, shrunkErrors) = try await run(["pay.yaml", "--output", "out", "--check"])
        #expect(shrunk == .exited(1))
        #expect(shrunkErrors.contains("out/PayModels+Part2.swift is no longer generated"), "\(shrunkErrors)")
        let (rewritten, rewriteOutput, _) = try await run(["pay.yaml", "--output", "out"])
        #expect(rewritten == .exited(0))
        #expect(rewriteOutput.contains("removed \(part2.path) (no longer generated)"), "\(rewriteOutput)")
        #expect(try Self.withParts(directory.url("out/PayModels.swift")).count == 1)
        try Data("// mine\n".utf8).write(to: part2)
        #expect(try await run(["pay.yaml", "--output", "out", "--check"]).0 == .exited(0))
        #expect(try await run(["pay.yaml", "--output", "out"]).0 == .exited(0))
        #expect(try String(contentsOf: part2, encoding: .utf8) == "// mine\n")
    }

    @Test func unchangedOutputIsNotRewritten() async throws {
        #expect(try await run([Self.notes, "--output", "out"]).0 == .exited(0))
        let file = directory.url("out/NotesApiV1Models.swift").path
        let past = Date(timeIntervalSince1970: 1_000_000)
        try FileManager.default.setAttributes([.modificationDate: past], ofItemAtPath: file)
        let (status, output, _) = try await run([Self.notes, "--output", "out"])
        #expect(status == .exited(0))
        #expect(output.hasSuffix("is up to date\n"))
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date == past)
    }

    @Test func anUnsupportedSchemaExitsTwoNamingItAndWritesNothing() async throws {
        try Data(
            """
            openapi: 3.1.0
            info: {title: T, version: 1.0.0}
            paths: {}
            components:
              schemas:
                Value: {oneOf: [{type: integer}, {type: number}]}
            """.utf8
        ).write(to: directory.url("odd.yaml"))
        let (status, output, errors) = try await run(["odd.yaml", "--output", "out"])
        #expect(status == .exited(2))
        #expect(output.isEmpty)
        #expect(
            errors.contains(
                "odd.yaml #/components/schemas/Value/oneOf: oneOf without a discriminator is supported when its "
                    + "variants are told apart by JSON kind; variants 0, 1 are all numbers"),
            "\(errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.url("out").path))
    }

    @Test func unreadableInputAndBadUsageExitTwo() async throws {
        try Data("openapi: 3.1.0\npaths: [\n".utf8).write(to: directory.url("broken.yaml"))
        let (broken, _, brokenErrors) = try await run(["broken.yaml", "--output", "out"])
        #expect(broken == .exited(2))
        #expect(brokenErrors.contains("broken.yaml") && brokenErrors.contains("not valid YAML"), "\(brokenErrors)")
        #expect(try await run([Self.notes]).0 == .exited(2))  // no --output
        #expect(try await run([Self.notes, "--output", "out", "--access", "open"]).0 == .exited(2))
    }

    // MARK: - Compiling

    /// Compiles `program` (as main.swift) with `generated` and its parts (`X+Part2.swift`, ...) against the
    /// KeelContract module these tests were built with, in Swift 6 mode with warnings as errors, runs it, and
    /// returns its output.
    private func compileAndRun(program: String, generated: URL, arguments: [String] = []) async throws -> String {
        let main = directory.url("main.swift")
        let sources = try Self.withParts(generated)
        try Data(program.utf8).write(to: main)
        let products = ChildProcess.productsDirectory
        var objects: [String] = []
        for module in ["KeelContract", "KeelCore"] {
            // The build's own list of objects (a directory listing could include stale ones).
            let map = try JSONSerialization.jsonObject(
                with: Data(contentsOf: products.appendingPathComponent("\(module).build/output-file-map.json")))
            for case (let source, let entry as [String: Any]) in map as? [String: Any] ?? [:] where !source.isEmpty {
                if let object = entry["object"] as? String { objects.append(object) }
            }
        }
        let executable = directory.url("program").path
        let compiler = try ChildProcess.launch(
            executable: try Self.swiftc(),
            arguments: [
                "-swift-version", "6", "-enable-upcoming-feature", "ExistentialAny", "-enable-upcoming-feature",
                "InternalImportsByDefault",
                "-warnings-as-errors", "-I", products.appendingPathComponent("Modules").path,
                main.path,
            ] + sources.map(\.path) + Self.systemModules + objects.sorted() + ["-o", executable])
        compiler.closeInput()
        let compiled = try await compiler.waitForExit(timeout: .seconds(300))
        try #require(compiled == .exited(0), "\(compiler.output(of: .standardError))")
        let child = try ChildProcess.launch(executable: executable, arguments: arguments)
        child.closeInput()
        let ran = try await child.waitForExit(timeout: .seconds(60))
        try #require(ran == .exited(0), "\(child.output(of: .standardError))")
        return child.output(of: .standardOutput)
    }

    /// `file` and the parts generate split from it (`X+Part2.swift`, `X+Part3.swift`, ...), in order.
    static func withParts(_ file: URL) throws -> [URL] {
        let stem = file.deletingPathExtension().lastPathComponent
        var files = [file]
        while case let part = file.deletingLastPathComponent().appendingPathComponent(
            "\(stem)+Part\(files.count + 1).swift"), FileManager.default.fileExists(atPath: part.path)
        {
            files.append(part)
        }
        return files
    }

    /// The header-only C modules KeelCore imports on Linux (a build outside SwiftPM needs their module maps).
    private static var systemModules: [String] {
        #if os(Linux)
            ["-I", repository.appendingPathComponent("Sources/CThreadStack").path]
        #else
            []
        #endif
    }

    /// The swiftc of the toolchain on PATH.
    static func swiftc() throws -> String {
        struct NoCompiler: Error {}
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = "\(directory)/swiftc"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        Issue.record("no swiftc on PATH")
        throw NoCompiler()
    }
}
