@testable import Server
import Testing

/// The connection's deadlines as a pure value: which one passes when, in which order, and when the
/// one timer must be started earlier. (The sockets-and-clocks side is in LimitTests and
/// HandlerTimeoutTests.)
@Suite struct ConnectionDeadlinesTests {
    private func deadlines() -> ConnectionDeadlines {
        var limits = ServerLimits()
        limits.headerTimeout = .milliseconds(100)
        limits.bodyTimeout = .milliseconds(200)
        limits.writeTimeout = .milliseconds(300)
        limits.idleTimeout = .milliseconds(400)
        limits.lingerTimeout = .milliseconds(500)
        return ConnectionDeadlines(limits: limits)
    }

    @Test func eachDeadlinePassesAtItsTimeoutAfterWhatStartedIt() {
        var clock = deadlines()
        let headBegan1 = clock.headBegan(at: 1000)
        #expect(headBegan1 == 1100)
        let head = ConnectionDeadlines.Activity(readingHead: true)
        #expect(clock.check(head, handlerDeadline: nil, now: 1099) == .next(1100))
        #expect(clock.check(head, handlerDeadline: nil, now: 1100) == .expired(.head))

        let bodyProgressed2 = clock.bodyProgressed(at: 2000)
        #expect(bodyProgressed2 == 2200)
        let body = ConnectionDeadlines.Activity(receivingBody: true)
        #expect(clock.check(body, handlerDeadline: nil, now: 2199) == .next(2200))
        #expect(clock.check(body, handlerDeadline: nil, now: 2200) == .expired(.body))
        // A consumer that asked to wait stops the body's clock.
        #expect(clock.check(ConnectionDeadlines.Activity(receivingBody: true, bodyPaused: true), handlerDeadline: nil, now: 9999) == .next(nil))

        let becameIdle3 = clock.becameIdle(at: 3000)
        #expect(becameIdle3 == 3400)
        #expect(clock.check(ConnectionDeadlines.Activity(idle: true), handlerDeadline: nil, now: 3400) == .expired(.idle))

        let beganLingering4 = clock.beganLingering(at: 4000)
        #expect(beganLingering4 == 4500)
        #expect(clock.check(ConnectionDeadlines.Activity(lingering: true), handlerDeadline: nil, now: 4499) == .next(4500))
        #expect(clock.check(ConnectionDeadlines.Activity(lingering: true), handlerDeadline: nil, now: 4500) == .expired(.linger))
    }

    /// A stalled write is checked first; a body in progress hides the head and idle clocks; the
    /// earliest of everything still ahead, handlers' deadlines included, is the next wake-up.
    @Test func writeStallComesFirstAndTheEarliestDeadlineIsNext() {
        var clock = deadlines()
        clock.wrote(at: 1000)
        clock.bodyProgressed(at: 1150)
        clock.headBegan(at: 0)
        let busy = ConnectionDeadlines.Activity(writing: true, receivingBody: true, readingHead: true)
        #expect(clock.check(busy, handlerDeadline: nil, now: 1250) == .next(1300))
        #expect(clock.check(busy, handlerDeadline: 1280, now: 1250) == .next(1280))
        #expect(clock.check(busy, handlerDeadline: nil, now: 1300) == .expired(.writeStalled))
        // Both the write (1300) and the body (1350) have passed: the stalled write is named.
        #expect(clock.check(busy, handlerDeadline: nil, now: 1400) == .expired(.writeStalled))
        #expect(clock.check(ConnectionDeadlines.Activity(receivingBody: true, readingHead: true), handlerDeadline: nil, now: 1400) == .expired(.body))
        // Without a body, the head clock (started long ago) is the one that passed.
        #expect(clock.check(ConnectionDeadlines.Activity(writing: true, readingHead: true), handlerDeadline: nil, now: 1250) == .expired(.head))
        // Nothing in flight and nothing idle (a shutdown under way): no deadline at all.
        #expect(clock.check(ConnectionDeadlines.Activity(), handlerDeadline: nil, now: 1250) == .next(nil))
    }

    /// The timer only moves earlier; once it fired, any deadline arms it again.
    @Test func timerIsArmedOnlyForAnEarlierDeadline() {
        var clock = deadlines()
        let arm5 = clock.arm(500)
        #expect(arm5)
        let arm6 = clock.arm(600)
        #expect(!arm6)
        let arm7 = clock.arm(400)
        #expect(arm7)
        #expect(clock.timerDue == 400)
        clock.timerFired()
        let arm8 = clock.arm(900)
        #expect(arm8)
    }

    @Test func hugeTimeoutsNeverWrapAround() {
        var limits = ServerLimits()
        limits.idleTimeout = .seconds(Int64.max)
        var clock = ConnectionDeadlines(limits: limits)
        let due = clock.becameIdle(at: 1 << 40)
        #expect(due > 1 << 40)
        #expect(clock.check(ConnectionDeadlines.Activity(idle: true), handlerDeadline: nil, now: 1 << 41) == .next(due))
        #expect(ConnectionDeadlines.after(UInt64.max - 5, 10) == UInt64.max - 1)
    }
}
