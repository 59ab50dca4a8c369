import CCurl
import Loop

/// A transfer curl finished: its measurements for the host's limit, redirects followed hop by
/// hop (each re-checked), and releasing what it held.
extension Fetcher {
    func transferDone(_ easy: UnsafeMutableRawPointer, _ result: CURLcode) {
        defer { scheduleDelivery() }
        var pointer: UnsafeMutableRawPointer?
        packd_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &pointer)
        guard let pointer else { return }
        let transfer = Unmanaged<Transfer>.fromOpaque(pointer).takeUnretainedValue()
        // A post that keeps only a prefix of a long answer stopped reading it: still an answer.
        guard result == CURLE_OK || transfer.keptBodyPrefix else {
            let error = FetchError.from(result, blocked: transfer.refusedAddress, exceeded: transfer.exceededLimit,
                                        bodyLimit: transfer.request.maxBodyBytes,
                                        range: transfer.rangeFailure ?? transfer.rangeProblem(status: transfer.status))
            measure(transfer, easy: easy, outcome: .failure(error))
            release(transfer, .failure(error))
            return
        }
        var status = 0
        packd_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        measure(transfer, easy: easy, outcome: .success(status))
        if transfer.request.post == nil, [301, 302, 303, 307, 308].contains(status) {
            var location: UnsafeMutablePointer<CChar>?
            packd_easy_getinfo_string(easy, CURLINFO_REDIRECT_URL, &location)
            if let location {
                follow(transfer, to: String(cString: location))
                return
            }
        }
        if let problem = transfer.completedRangeProblem(status: status) { return release(transfer, .failure(problem)) }
        let response = FetchResponse(status: status, headers: transfer.headers, body: transfer.body,
                                     effectiveURL: transfer.canonicalURL, redirects: transfer.redirects)
        release(transfer, .success(response))
    }

    /// Tells the host's limiter (and `onHostSample`) how a transfer went: its latency from request
    /// sent to last byte (connection set-up and waiting for a stream excluded: they are not the
    /// server's queue), and whether it was a "slow down". Our own client being the bottleneck
    /// shows in the rounds' throughput instead (the slow start's exit).
    func measure(_ transfer: Transfer, easy: UnsafeMutableRawPointer, outcome: Result<Int, FetchError>) {
        guard transfer.request.post == nil, var host = hosts[transfer.hostKey] else { return }
        var total: curl_off_t = 0
        var pretransfer: curl_off_t = 0
        packd_easy_getinfo_off(easy, CURLINFO_TOTAL_TIME_T, &total)
        packd_easy_getinfo_off(easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer)
        let latency = Duration.microseconds(Int64(max(0, total - pretransfer)))
        let signal: HostConcurrencyLimiter.Signal
        switch outcome {
        case .success(let status):
            var version = 0
            packd_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
            if version != 0, version != host.httpVersion {
                host.httpVersion = version
                applyPolicy(to: &host)
            }
            signal = switch status {
            case 429, 503: .overloaded(.rateLimited)
            case ..<500: .answered(latency: latency)
            default: .other
            }
        case .failure(.timedOut), .failure(.connectionReset), .failure(.truncatedBody):
            signal = .overloaded(.errors)
        case .failure:
            signal = .other
        }
        let now = ContinuousClock.now
        if let ticket = transfer.limiterTicket {
            host.limiter.finished(signal, ticket: ticket, inFlight: host.active, now: now)
        }
        host.lastUsed = now
        hosts[transfer.hostKey] = host
        onHostSample?(HostSample(host: host.name, status: try? outcome.get(), error: outcome.failureValue,
                                 latency: latency, limit: host.limiter.limit))
    }

    /// Queues the next hop as a fresh request to the (possibly new) host, with the rules applied
    /// to its canonical URL — the upstream's Location is never trusted to carry our credentials.
    func follow(_ transfer: Transfer, to location: String) {
        guard transfer.redirects < configuration.maxRedirects else {
            release(transfer, .failure(.tooManyRedirects(limit: configuration.maxRedirects)))
            return
        }
        let canonical = rules.canonical(forWire: location)
        let target: WireTarget
        do throws(FetchError) {
            target = try WireTarget(rules.wire(for: canonical).url)
        } catch {
            release(transfer, .failure(error))
            return
        }
        detach(transfer)
        transfer.redirects += 1
        transfer.canonicalURL = canonical
        transfer.retarget(target)
        waiting[transfer.id] = transfer
        enqueue(transfer.id, on: target, canonical: canonical, owner: transfer.request.owner, first: true)
        scheduleDispatch(after: .zero)
    }

    func abort(_ transfer: Transfer, with error: FetchError) {
        release(transfer, .failure(error))
    }

    /// Takes a running transfer off curl and the host's count, and queues its completion.
    func release(_ transfer: Transfer, _ result: Result<FetchResponse, FetchError>) {
        detach(transfer)
        finished.append((transfer, result))
    }

    func detach(_ transfer: Transfer) {
        guard running.removeValue(forKey: transfer.id) != nil else { return }
        let owner = transfer.request.owner
        runningByOwner[owner] = (runningByOwner[owner] ?? 1) > 1 ? runningByOwner[owner]! - 1 : nil
        onRunningCountChange?(running.count)
        if transfer.request.post == nil { hosts[transfer.hostKey]?.active -= 1 }
        if let easy = transfer.easy {
            multi.remove(easy)
            if idleHandles.count < configuration.maxTransfers {
                idleHandles.append(easy)
            } else {
                curl_easy_cleanup(easy)
            }
        }
        transfer.detach()
        scheduleDispatch(after: .zero)
    }
}
