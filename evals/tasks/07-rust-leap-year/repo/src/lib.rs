//! Calendar helpers.

/// Whether `year` is a leap year in the Gregorian calendar: divisible by 4, except century
/// years, which are leap years only when divisible by 400.
pub fn is_leap_year(year: u32) -> bool {
    year % 4 == 0
}

#[cfg(test)]
mod tests {
    use super::is_leap_year;

    #[test]
    fn ordinary_years() {
        assert!(is_leap_year(2024));
        assert!(!is_leap_year(2023));
    }

    #[test]
    fn centuries() {
        assert!(!is_leap_year(1900));
        assert!(is_leap_year(2000));
    }
}
