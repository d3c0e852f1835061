# The protection postures the cost-model validations compare (cost_model_validate.sh on
# loopback, cost_model_validate_link.sh across the delay link), and the smb.conf [global] lines
# that set each. Sourced, not run.
# shellcheck shell=bash
postures=(none sign-hmac-sha256 sign-aes-128-cmac sign-aes-128-gmac
  enc-aes-128-ccm enc-aes-128-gcm enc-aes-256-gcm enc-aes-256-ccm)
posture_conf() {
  case "$1" in
    none) echo "# no protection" ;;
    sign-hmac-sha256) printf 'server signing = mandatory\nserver smb3 signing algorithms = HMAC-SHA256\n' ;;
    sign-aes-128-cmac) printf 'server signing = mandatory\nserver smb3 signing algorithms = AES-128-CMAC\n' ;;
    sign-aes-128-gmac) printf 'server signing = mandatory\nserver smb3 signing algorithms = AES-128-GMAC\n' ;;
    enc-aes-128-ccm) printf 'server smb encrypt = required\nserver smb3 encryption algorithms = AES-128-CCM\n' ;;
    enc-aes-128-gcm) printf 'server smb encrypt = required\nserver smb3 encryption algorithms = AES-128-GCM\n' ;;
    enc-aes-256-gcm) printf 'server smb encrypt = required\nserver smb3 encryption algorithms = AES-256-GCM\n' ;;
    enc-aes-256-ccm) printf 'server smb encrypt = required\nserver smb3 encryption algorithms = AES-256-CCM\n' ;;
  esac
}
