// The commit packd was built from; empty when unknown. Replaced by builds that know it
// (docker/Dockerfile's PACKD_COMMIT argument); never edit it by hand.
let buildCommit = ""
