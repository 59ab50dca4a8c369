"""schemathesis hooks for `make verify-api` (loaded through SCHEMATHESIS_HOOKS).

POST /v1/imports takes `application/vnd.sqlite3`, bytes like `application/octet-stream`, for
which schemathesis has a serializer but none for the SQLite media type.
"""
import schemathesis

schemathesis.serializer.alias("application/vnd.sqlite3", "application/octet-stream")
