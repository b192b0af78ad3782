//! A Windows exit code in words. A process that dies of an exception (or of
//! Ctrl+C) exits with the NTSTATUS of it as its code: shown in hexadecimal
//! with its name, as Windows' own tools show it.

/// "exited with code N", N in hexadecimal with its NTSTATUS name where it has one.
pub(crate) fn describe_code(code: i32) -> String {
    let c = code as u32;
    match name(c) {
        Some(name) => format!("exited with code 0x{c:08X} ({name})"),
        None if c >= 0x8000_0000 => format!("exited with code 0x{c:08X}"),
        None => format!("exited with code {c}"),
    }
}

fn name(code: u32) -> Option<&'static str> {
    Some(match code {
        0x8000_0003 => "STATUS_BREAKPOINT",
        0xC000_0005 => "STATUS_ACCESS_VIOLATION",
        0xC000_0017 => "STATUS_NO_MEMORY",
        0xC000_001D => "STATUS_ILLEGAL_INSTRUCTION",
        0xC000_0025 => "STATUS_NONCONTINUABLE_EXCEPTION",
        0xC000_007B => "STATUS_INVALID_IMAGE_FORMAT",
        0xC000_008C => "STATUS_ARRAY_BOUNDS_EXCEEDED",
        0xC000_008E => "STATUS_FLOAT_DIVIDE_BY_ZERO",
        0xC000_0094 => "STATUS_INTEGER_DIVIDE_BY_ZERO",
        0xC000_0095 => "STATUS_INTEGER_OVERFLOW",
        0xC000_0096 => "STATUS_PRIVILEGED_INSTRUCTION",
        0xC000_00FD => "STATUS_STACK_OVERFLOW",
        0xC000_0135 => "STATUS_DLL_NOT_FOUND",
        0xC000_0138 => "STATUS_ORDINAL_NOT_FOUND",
        0xC000_0139 => "STATUS_ENTRYPOINT_NOT_FOUND",
        0xC000_013A => "STATUS_CONTROL_C_EXIT",
        0xC000_0142 => "STATUS_DLL_INIT_FAILED",
        0xC000_0374 => "STATUS_HEAP_CORRUPTION",
        0xC000_0409 => "STATUS_STACK_BUFFER_OVERRUN",
        0xC000_0602 => "STATUS_FAIL_FAST_EXCEPTION",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_in_words() {
        assert_eq!(describe_code(3), "exited with code 3");
        assert_eq!(describe_code(0xC000_013Au32 as i32), "exited with code 0xC000013A (STATUS_CONTROL_C_EXIT)");
        assert_eq!(describe_code(0xC000_0005u32 as i32), "exited with code 0xC0000005 (STATUS_ACCESS_VIOLATION)");
        assert_eq!(describe_code(0xE043_4352u32 as i32), "exited with code 0xE0434352");
    }
}
