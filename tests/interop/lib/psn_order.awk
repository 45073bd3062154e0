# Does any RoCE sender skip a PSN? Input: tshark -T fields of
#   ip.src ipv6.src udp.srcport bth.destqp bth.opcode bth.psn frame.number reth.dmalen
# Requests of one flow (source address and port, destination QP) must
# advance one PSN per packet (a READ request by its response count) past
# the highest PSN sent so far, or resend a PSN sent before (a
# retransmission: go-back-N, or a loss probe, which resends the oldest and
# the newest unacknowledged packets without going back: src/transport/rto.c).
# A jump of more than 65536 is a new connection
# reusing the QPN with a fresh random start PSN, not a skip: no message
# here spans that many packets.
# QP1 is left out: the CM's MADs are UD (no receiver checks a UD PSN), and
# each port's QP1 draws its PSNs from one counter for IPv4 and IPv6 alike
# (flows here are per address), which xrxed's restarts reset.
BEGIN { FS = "\t" }
$4 == "0x000001" { next }
{
	k = $1 $2 ":" $3 "/" $4; op = $5 + 0; psn = $6 + 0; oc = op % 32
	if (oc >= 13 && oc <= 18) next # READ responses, ACKs, atomic ACKs
	fresh = 0
	if (k in np) {
		d = (psn - np[k] + 16777216) % 16777216
		if (d > 0 && d <= 65536) {
			print "frame " $7 " from " $1 $2 " to QP " $4 ": PSN " psn ", expected " np[k]
			bad++
		} else if (d > 65536 && d < 16777216 - 65536) {
			fresh = 1 # a new connection
		}
	}
	n = 1
	if (oc == 12) { # RDMA READ request: the responses use one PSN each (path MTU >= 1024 here)
		n = int(($8 + 1023) / 1024)
		if (n < 1) n = 1
	}
	# np: one past the highest PSN sent (resends below it leave it)
	e = (psn + n) % 16777216
	if (!(k in np) || fresh || d == 0 || (d > 0 && d <= 65536))
		np[k] = e
	else if (((e - np[k] + 16777216) % 16777216) <= 65536)
		np[k] = e # a resend reaching past it: a READ resumed, or the like
	reqs++
}
END { print reqs + 0 " requests, " bad + 0 " skipped PSNs" }
