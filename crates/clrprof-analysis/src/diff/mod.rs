//! `clrprof diff`: two heap snapshots by type ([`heap`]), or two traces' allocation
//! samples ([`alloc`]), each change a signed [`delta`]. Their text is in
//! [`text`](crate::text).

pub mod alloc;
pub mod heap;

/// `after - before` as a signed change, saturating at `i64`'s range.
pub fn delta(before: u64, after: u64) -> i64 {
    let d = i128::from(after) - i128::from(before);
    d.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_and_saturating() {
        assert_eq!(delta(10, 7), -3);
        assert_eq!(delta(7, 10), 3);
        assert_eq!(delta(0, u64::MAX), i64::MAX);
        assert_eq!(delta(u64::MAX, 0), i64::MIN);
    }
}
