// Thin C wrappers for OpenSSL libcrypto (Linux only; Apple platforms use CryptoKit).
// Wraps function-like macros and the control calls whose constants are macros.
// Imported only by thin adapters: SHA-256 in KeelContractTools (and, later, KeelStore sealing).
#ifndef KEEL_CCRYPTO_SHIM_H
#define KEEL_CCRYPTO_SHIM_H

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <openssl/rand.h>

/// The runtime library's version number (OPENSSL_VERSION_NUMBER of the loaded libcrypto).
static inline unsigned long keel_openssl_version_number(void) {
    return OpenSSL_version_num();
}

/// Sets the IV length of an AES-GCM context (EVP_CTRL_GCM_SET_IVLEN is a macro).
static inline int keel_evp_gcm_set_ivlen(EVP_CIPHER_CTX *ctx, int length) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, length, NULL);
}

/// Reads the authentication tag after encryption (EVP_CTRL_GCM_GET_TAG is a macro).
static inline int keel_evp_gcm_get_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, length, tag);
}

/// Sets the expected authentication tag before finishing decryption (EVP_CTRL_GCM_SET_TAG is a macro).
static inline int keel_evp_gcm_set_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, length, tag);
}

#endif
