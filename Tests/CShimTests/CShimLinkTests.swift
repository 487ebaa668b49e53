import CSQLite
import CYAML
import Testing

#if canImport(CCrypto)
    import CCrypto
#endif

/// Each system library links and answers one real call through its shim.
@Suite struct CShimLinkTests {
    @Test func sqliteOpensAnInMemoryDatabaseAndBindsThroughTheTransientShim() throws {
        var db: OpaquePointer?
        #expect(sqlite3_open(":memory:", &db) == SQLITE_OK)
        defer { sqlite3_close(db) }

        var foreignKeys: Int32 = -1
        #expect(keel_sqlite3_db_config_int(db, SQLITE_DBCONFIG_ENABLE_FKEY, 1, &foreignKeys) == SQLITE_OK)
        #expect(foreignKeys == 1)

        var statement: OpaquePointer?
        #expect(sqlite3_prepare_v2(db, "SELECT upper(?)", -1, &statement, nil) == SQLITE_OK)
        defer { sqlite3_finalize(statement) }
        #expect(sqlite3_bind_text(statement, 1, "keel", -1, keel_sqlite3_transient()) == SQLITE_OK)
        #expect(sqlite3_step(statement) == SQLITE_ROW)
        let text = try #require(sqlite3_column_text(statement, 0))
        #expect(String(cString: text) == "KEEL")
    }

    @Test func libyamlParsesAScalarThroughTheEventShim() throws {
        var parser = yaml_parser_t()
        #expect(yaml_parser_initialize(&parser) == 1)
        defer { yaml_parser_delete(&parser) }
        let input: [UInt8] = Array("greeting: hello\n".utf8)
        var scalars: [String] = []
        input.withUnsafeBufferPointer { buffer in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var event = yaml_event_t()
            repeat {
                #expect(yaml_parser_parse(&parser, &event) == 1)
                if let value = keel_yaml_event_scalar_value(&event) {
                    let length = keel_yaml_event_scalar_length(&event)
                    let bytes = UnsafeBufferPointer(start: value, count: length)
                    scalars.append(String(decoding: bytes, as: UTF8.self))
                }
                let done = event.type == YAML_STREAM_END_EVENT || event.type == YAML_NO_EVENT
                yaml_event_delete(&event)
                if done { break }
            } while true
        }
        #expect(scalars == ["greeting", "hello"])
    }

    #if canImport(CCrypto)
        @Test func libcryptoSealsWithAESGCMThroughTheControlShims() throws {
            #expect(keel_openssl_version_number() >= 0x3000_0000)
            let key = [UInt8](repeating: 7, count: 32)
            let nonce = [UInt8](repeating: 1, count: 12)
            let plaintext = Array("keel".utf8)

            let context = try #require(EVP_CIPHER_CTX_new())
            defer { EVP_CIPHER_CTX_free(context) }
            #expect(EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1)
            #expect(keel_evp_gcm_set_ivlen(context, Int32(nonce.count)) == 1)
            #expect(EVP_EncryptInit_ex(context, nil, nil, key, nonce) == 1)
            var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
            var written: Int32 = 0
            #expect(EVP_EncryptUpdate(context, &ciphertext, &written, plaintext, Int32(plaintext.count)) == 1)
            #expect(EVP_EncryptFinal_ex(context, &ciphertext, &written) == 1)
            var tag = [UInt8](repeating: 0, count: 16)
            #expect(keel_evp_gcm_get_tag(context, &tag, 16) == 1)
            #expect(ciphertext != plaintext)
            #expect(tag != [UInt8](repeating: 0, count: 16))
        }
    #endif
}
