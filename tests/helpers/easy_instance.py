"""The hand-worked EASY backfilling instance (Lifka 1995; Mu'alem & Feitelson 2001 §2) shared by
tests/policies/pooled/test_easy_backfill.py and tests/policies/pooled/test_backfill_family.py:
jobs as (arrival, duration, need, estimate) on k = 4 servers, and each job's start time worked
by hand."""

# Hand-worked instance on k = 4 servers, (arrival, duration, need, estimate):
#   t=0  J0 (need 2, runs 10, est 10) starts.
#   t=1  J1 (need 4) does not fit: reservation at the shadow time 10 (J0's expected end), with
#        4 - 4 = 0 extra servers.
#   t=2  J2 (need 2, runs 3, est 4): 2 + 4 <= 10, backfilled at 2 (ends at 5).
#   t=3  J3 (need 1, runs 20, est 20): no free server. At t=5 (J2 ends) 2 servers are free but
#        5 + 20 > 10 and it would need an extra server (there are 0): it waits.
#   t=6  J4 (need 1, runs 4, est 4): 6 + 4 <= 10, backfilled at 6 (ends at 10); 1 server free.
#   t=7  J5 (need 1, runs 1, est 12): 7 + 12 > 10 and no extra server: waits (its estimate is
#        12 times too long).
#   t=10 J0 and J4 end: J1 starts, exactly at its reservation; J3 and J5 wait behind it.
#   t=15 J1 ends: J3 and J5 (need 1 each) start in FCFS order.
HAND = [
    (0, 10, 2, 10),
    (1, 5, 4, 5),
    (2, 3, 2, 4),
    (3, 20, 1, 20),
    (6, 4, 1, 4),
    (7, 1, 1, 12),
]
HAND_STARTS = [0, 10, 2, 15, 6, 15]
# With actual durations J5 (runs 1) is backfilled at t=7 (7 + 1 <= 10, one server free); the
# other decisions are unchanged (J2's and J4's estimates do not change their side of 10).
HAND_STARTS_ACTUAL = [0, 10, 2, 15, 6, 7]
