//! What the generated `surface.rs` is made of: the shapes of its tables (a
//! method with its params' fields) and the declaration of `ErrorCode` from
//! its table of codes. The tables themselves come from `schema/` (see
//! CONTRIBUTING.md, "Adding a method, an event or an error code").

/// The type a param field must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    String,
    /// A non-negative integer.
    Integer,
    Boolean,
    /// Any JSON value.
    Any,
    /// One of these strings.
    Enum(&'static [&'static str]),
}

/// One field of a method's params.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub name: &'static str,
    pub ty: FieldType,
    pub required: bool,
}

/// One method of the protocol.
#[derive(Clone, Copy, Debug)]
pub struct Method {
    /// The wire name.
    pub name: &'static str,
    pub fields: &'static [Field],
}

/// Declares `ErrorCode` from the table of codes: a variant per code (with
/// its doc), its wire name, and the list of all of them in the table's order.
macro_rules! error_codes {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal,)*) => {
        /// The `code` of every error the SDK reports.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[doc = $doc])* $variant,)*
        }

        impl ErrorCode {
            /// Every code, in the order of the protocol's table.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            /// The wire name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $name,)*
                }
            }

            /// The code named `name`, if there is one.
            pub fn from_name(name: &str) -> Option<ErrorCode> {
                ErrorCode::ALL.iter().copied().find(|c| c.as_str() == name)
            }
        }

        impl std::fmt::Display for ErrorCode {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use error_codes;
