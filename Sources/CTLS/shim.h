// Thin C wrappers for OpenSSL libssl (Linux only; Apple platforms use URLSession's TLS).
// Wraps function-like macros. Imported only by KeelHTTP's TLS adapter (Transport/Socket/TLSSession.swift).
#ifndef KEEL_CTLS_SHIM_H
#define KEEL_CTLS_SHIM_H

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/// Sends the server name (SNI) in the handshake (SSL_set_tlsext_host_name is a macro).
static inline long keel_ssl_set_server_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

/// Refuses anything older than TLS 1.2 (SSL_CTX_set_min_proto_version is a macro).
static inline int keel_ssl_ctx_require_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}

#endif
