package audit

// HeadSealV1 is headSealV1, for tests of heads sealed before heads recorded
// their first sequence number and length.
var HeadSealV1 = headSealV1
