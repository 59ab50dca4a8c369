#ifndef PACKD_CCRYPTO_SHIM_H
#define PACKD_CCRYPTO_SHIM_H
/* OpenSSL's libcrypto: already in the process through libcurl (libcurl4-openssl-dev). */
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#endif
