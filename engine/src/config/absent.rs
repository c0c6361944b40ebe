//! The rules of a part left out of the build (a cargo feature off): a
//! list that is always empty. The keys are refused then, and a site's
//! field of this type has no clone, drop or loop code of the rules'
//! type in such a binary: every use of it iterates an empty slice the
//! compiler sees through.

/// No rules: the part that reads them is not built.
#[derive(Debug)]
pub struct NoRules<T>(std::marker::PhantomData<T>);

impl<T> std::ops::Deref for NoRules<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &[]
    }
}

impl<T> std::ops::DerefMut for NoRules<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut []
    }
}

impl<T> Clone for NoRules<T> {
    fn clone(&self) -> Self {
        NoRules::default()
    }
}

impl<T> Default for NoRules<T> {
    fn default() -> Self {
        NoRules(std::marker::PhantomData)
    }
}

impl<T> From<Vec<T>> for NoRules<T> {
    fn from(_: Vec<T>) -> Self {
        NoRules::default()
    }
}
