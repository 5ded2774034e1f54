//! Bad input: every case exits 2 with a located error and writes nothing.
