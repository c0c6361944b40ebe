# bash completion for brisk (installed as
# /usr/share/bash-completion/completions/brisk).
_brisk() {
    local cur prev
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    case "$prev" in
        --config|--pid-file|--tls-cert|--tls-key)
            COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --root)
            COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --access-log|--error-log)
            COMPREPLY=($(compgen -f -W "- off" -- "$cur")); return ;;
        --log-level)
            COMPREPLY=($(compgen -W "off error warn info debug" -- "$cur")); return ;;
        --user)
            COMPREPLY=($(compgen -u -- "$cur")); return ;;
        --group)
            COMPREPLY=($(compgen -g -- "$cur")); return ;;
        --listen|--port|--workers)
            return ;;
    esac
    COMPREPLY=($(compgen -W "--config --listen --port --root --autoindex --workers --daemon --pid-file --log-level --access-log --error-log --user --group --allow-root --no-sandbox --tls-cert --tls-key --http3 --check-config --reload --stop --upgrade --reopen-logs --version --help" -- "$cur"))
}
complete -F _brisk brisk
